import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";

import { explainFailure, probe } from "../src/probe";

/** A stand-in interpreter: a shell script that keeps its arguments in `<path>.args`, prints `stderr` and exits
 *  with `code`. */
function fakePython(stderr: string, code: number): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "tritonize-probe-")), "python");
  writeFileSync(file, `#!/bin/sh\necho "$@" > "$0.args"\nprintf '%s\\n' "${stderr}" >&2\nexit ${code}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe("probe", () => {
  it("reports an interpreter that does not exist", async () => {
    const result = await probe("/nonexistent/bin/python3", undefined, process.env);
    assert.deepEqual(result, { ok: false, problem: "not-found", detail: "/nonexistent/bin/python3 does not exist" });
  });

  it("runs the server module's import and classifies what failed", async () => {
    const python = fakePython("ModuleNotFoundError: No module named 'lsp_server'", 1);
    const result = await probe(python, undefined, process.env);
    assert.equal(readFileSync(`${python}.args`, "utf8"), "-c import lsp_server.server\n");
    assert.deepEqual(result, {
      ok: false,
      problem: "not-installed",
      detail: "ModuleNotFoundError: No module named 'lsp_server'",
    });
  });

  it(
    "accepts an interpreter that imports the server",
    { skip: !process.env.TRITONIZE_TEST_PYTHON && "set TRITONIZE_TEST_PYTHON to a Python with tritonize[lsp]" },
    async () => {
      assert.deepEqual(await probe(process.env.TRITONIZE_TEST_PYTHON ?? "", undefined, process.env), { ok: true });
    },
  );
});

describe("explainFailure", () => {
  it("tells a missing tritonize from a missing extra from anything else", () => {
    const traceback = (last: string) => `Traceback (most recent call last):\n  File "<string>", line 1\n${last}\n`;
    assert.equal(explainFailure(traceback("ModuleNotFoundError: No module named 'verifier'")).ok, false);
    assert.deepEqual(explainFailure(traceback("ModuleNotFoundError: No module named 'lsp_server'")), {
      ok: false,
      problem: "not-installed",
      detail: "ModuleNotFoundError: No module named 'lsp_server'",
    });
    assert.deepEqual(explainFailure(traceback("ModuleNotFoundError: No module named 'pygls.lsp'")), {
      ok: false,
      problem: "missing-extra",
      detail: "ModuleNotFoundError: No module named 'pygls.lsp'",
    });
    assert.deepEqual(explainFailure(traceback("ImportError: libcuda.so.1: cannot open shared object file")), {
      ok: false,
      problem: "other",
      detail: "ImportError: libcuda.so.1: cannot open shared object file",
    });
    assert.deepEqual(explainFailure(""), {
      ok: false,
      problem: "other",
      detail: "the interpreter failed without a message",
    });
  });
});
