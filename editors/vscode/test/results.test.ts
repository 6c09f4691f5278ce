import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { asResult, createdFile, reportHeading } from "../src/results";

const source = "file:///w/layernorm_gelu.py";
const args = [{ uri: source, line: 15 }];
const report = { verdict: "correct", reward: 1 };

describe("command results", () => {
  it("reads the server's result object and refuses anything else", () => {
    assert.equal(asResult(undefined), undefined);
    assert.equal(asResult({ report }), undefined);
    assert.deepEqual(asResult({ status: "applied", uri: "file:///w/k.py", report, summary: "s", source: "x" }), {
      status: "applied",
      report,
      uri: "file:///w/k.py",
      summary: "s",
    });
  });

  it("saves a kernel file Convert created beside the source, never the source itself", () => {
    const created = asResult({ status: "applied", uri: "file:///w/layernorm_gelu_triton.py", report })!;
    assert.equal(createdFile(args, created), "file:///w/layernorm_gelu_triton.py");
    assert.equal(createdFile(args, asResult({ status: "applied", uri: source, report })!), undefined);
    assert.equal(createdFile(args, asResult({ status: "declined", uri: "file:///w/k_triton.py" })!), undefined);
  });

  it("titles the report by command and file, and shows none without a report", () => {
    const applied = asResult({
      status: "applied",
      uri: "file:///w/layernorm%20gelu_triton.py",
      report,
      summary: "verified correct on cpu",
    })!;
    assert.deepEqual(reportHeading("tritonize.convert", args, applied), {
      title: "Converted to Triton: layernorm gelu_triton.py",
      subtitle: "verified correct on cpu",
    });
    const proposed = asResult({ status: "proposed", report })!;
    assert.equal(
      reportHeading("tritonize.convert", args, proposed)?.title,
      "Converted to Triton: layernorm_gelu.py (proposed)",
    );
    const verified = asResult({ status: "verified", report })!;
    assert.equal(
      reportHeading("tritonize.verify", [{ uri: "file:///w/k_triton.py" }], verified)?.title,
      "Verified k_triton.py",
    );
    assert.equal(reportHeading("tritonize.convert", args, asResult({ status: "error" })!), undefined);
  });
});
