import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { passed, reportHtml, reportRows, summary, violations, type Report } from "../src/report";

/** A CPU report as `tritonize verify --json` prints it (fields the panel does not show left out). */
const cpu: Report = {
  verdict: "correct",
  reward: 1.0,
  violations: [],
  max_abs_error: 7.450580596923828e-9,
  max_rel_error: 1.4759618942062e-7,
  trials: 2,
  device: "cpu",
  interpreter: true,
  timing: null,
  message: "matches the reference on 2 trials plus an enable_grad call",
  tolerance: { atol: 0.0001, rtol: 0.0001 },
  kernels: ["softmax_kernel"],
  policy: "strict",
  coverage: 1.0,
  library_calls: [],
};

const gpu: Report = {
  ...cpu,
  verdict: "correct",
  device: "cuda",
  interpreter: false,
  timing: {
    candidate_ms: 0.121,
    eager_ms: 0.2226,
    compile_ms: 0.15,
    speedup_vs_eager: 1.8397,
    speedup_vs_compile: 1.2397,
  },
  coverage: 0.62,
  policy: "hybrid",
  reward: 0,
  library_calls: ["torch.nn.functional.linear"],
};

const label = (report: Report, name: string) => reportRows(report).find((row) => row.label === name)?.value;

describe("reportRows", () => {
  it("gives verdict, error, trials, device, speedups and coverage of a CPU run", () => {
    assert.deepEqual(reportRows(cpu), [
      { label: "Verdict", value: "correct (reward 1, strict policy)" },
      { label: "Max error", value: "absolute 7.5e-9, relative 1.5e-7 (tolerance atol 0.0001, rtol 0.0001)" },
      { label: "Trials", value: "2" },
      { label: "Device", value: "cpu (Triton interpreter)" },
      { label: "Speedup vs eager", value: "not timed (timing needs a GPU)" },
      { label: "Speedup vs torch.compile", value: "not timed (timing needs a GPU)" },
      { label: "Coverage", value: "100% of the calls in Triton" },
      { label: "Kernels", value: "softmax_kernel" },
      { label: "Message", value: "matches the reference on 2 trials plus an enable_grad call" },
    ]);
  });

  it("gives speedups with both times, and the work left to PyTorch, on a GPU", () => {
    assert.equal(label(gpu, "Speedup vs eager"), "1.84x (0.12 ms vs 0.22 ms)");
    assert.equal(label(gpu, "Speedup vs torch.compile"), "1.24x (0.12 ms vs 0.15 ms)");
    assert.equal(label(gpu, "Coverage"), "62% of the GPU kernel time in Triton");
    assert.equal(label(gpu, "Done in PyTorch"), "torch.nn.functional.linear");
    assert.equal(label(gpu, "Device"), "cuda");
  });

  it("prints small errors with an exponent and times with two digits", () => {
    const report: Report = {
      ...gpu,
      max_abs_error: 1.2e-6,
      max_rel_error: 0.00031,
      timing: { ...(gpu.timing as object), eager_ms: 1234.5 },
    };
    assert.equal(label(report, "Max error"), "absolute 1.2e-6, relative 0.00031 (tolerance atol 0.0001, rtol 0.0001)");
    assert.equal(label(report, "Speedup vs eager"), "1.84x (0.12 ms vs 1200 ms)");
  });

  it("says what was not measured instead of leaving it blank", () => {
    const failed: Report = { verdict: "compile_error", reward: 0, device: "cuda", timing: {}, coverage: null };
    assert.equal(label(failed, "Max error"), "not measured");
    assert.equal(label(failed, "Speedup vs eager"), "not measured");
    assert.equal(label(failed, "Coverage"), "not measured");
    assert.equal(label(failed, "Trials"), "unknown");
  });
});

describe("summary and passed", () => {
  it("puts verdict, error and speedup on one line", () => {
    assert.equal(summary(cpu), "correct, max error 7.5e-9");
    assert.equal(summary(gpu), "correct, max error 7.5e-9, 1.84x vs eager");
    assert.equal(summary({ verdict: "timeout" }), "timeout");
  });

  it("passes a rewarded correct kernel, and a correct one under the hybrid policy", () => {
    assert.equal(passed(cpu), true);
    assert.equal(passed(gpu), true);
    assert.equal(passed({ ...cpu, reward: 0 }), false);
    assert.equal(passed({ ...cpu, verdict: "rejected" }), false);
  });
});

describe("reportHtml", () => {
  const rejected: Report = {
    ...cpu,
    verdict: "rejected",
    reward: 0,
    message: "forward computes with <torch.matmul> & more",
    violations: [{ rule: "TRI302", severity: "error", message: "torch.matmul in forward", line: 27, column: 8 }],
  };

  it("lists the violations with rule, severity and line", () => {
    assert.deepEqual(violations(rejected), [
      { rule: "TRI302", severity: "error", line: 27, message: "torch.matmul in forward" },
    ]);
    const html = reportHtml("Verified k.py", "against k.py::Model", rejected, "vscode-resource:");
    assert.match(html, /<tr><td>TRI302<\/td><td>error<\/td><td>27<\/td><td>torch\.matmul in forward<\/td><\/tr>/);
    assert.match(html, /<span class="badge fail" id="verdict">rejected<\/span>/);
  });

  it("escapes every text from the report and runs no script", () => {
    const html = reportHtml("<b>title</b>", "sub", rejected, "vscode-resource:");
    assert.ok(!html.includes("<torch.matmul>") && !html.includes("<b>title</b>"));
    assert.match(html, /&#60;torch\.matmul&#62; &#38; more/);
    assert.match(html, /default-src 'none'; style-src vscode-resource: 'unsafe-inline';/);
    assert.ok(!/<script/i.test(html));
  });
});
