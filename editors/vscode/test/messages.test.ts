import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import type { Interpreter } from "../src/interpreter";
import { installArgs, isTritonizeCheckout, startFailure, stoppedServer } from "../src/messages";

const venv: Interpreter = { command: "/w/.venv/bin/python", source: "python-extension" };

describe("startFailure", () => {
  it("names the interpreter, where it came from, and what is wrong with it", () => {
    assert.equal(
      startFailure(venv, {
        ok: false,
        problem: "not-installed",
        detail: "ModuleNotFoundError: No module named 'lsp_server'",
      }),
      "Tritonize cannot start its language server: tritonize is not installed in /w/.venv/bin/python (selected in the Python extension) (ModuleNotFoundError: No module named 'lsp_server').",
    );
    const missing = startFailure(venv, { ok: false, problem: "missing-extra", detail: "No module named 'pygls'" });
    assert.match(missing, /without its language server dependencies .*No module named 'pygls'.*\[lsp,serve\] extras/);
    const absent = startFailure(
      { command: "python3", source: "path" },
      { ok: false, problem: "not-found", detail: "" },
    );
    assert.match(absent, /the Python interpreter python3 \(found on PATH\) was not found\. Set tritonize\.interpreter/);
    const other = startFailure(venv, { ok: false, problem: "other", detail: "SyntaxError: invalid syntax" });
    assert.match(
      other,
      /with \/w\/\.venv\/bin\/python \(selected in the Python extension\): SyntaxError: invalid syntax$/,
    );
  });

  it("says the server stopped, and why, when it fails after starting", () => {
    assert.equal(
      stoppedServer(venv, "connection closed"),
      "The Tritonize language server (/w/.venv/bin/python, selected in the Python extension) stopped: connection closed. See the output for details.",
    );
  });
});

describe("installing", () => {
  it("installs the checkout editable with the language and model server extras", () => {
    assert.deepEqual(installArgs("/src/tritonize"), ["-m", "pip", "install", "-e", "/src/tritonize[lsp,serve]"]);
  });

  it("recognises tritonize's own pyproject.toml and nothing else", () => {
    const ours = readFileSync(path.join(__dirname, "..", "..", "..", "..", "pyproject.toml"), "utf8");
    assert.equal(isTritonizeCheckout(ours), true);
    assert.equal(isTritonizeCheckout('[project]\nname = "other"\n[tool.x]\nname = "tritonize"\n'), false);
    assert.equal(isTritonizeCheckout('[tool.poetry]\nname = "tritonize"\n'), false);
    assert.equal(isTritonizeCheckout("[project]\nversion = '1'\nname = 'tritonize'\n"), true);
  });
});
