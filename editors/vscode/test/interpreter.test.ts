import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { describeSource, expandPath, resolveInterpreter, type InterpreterInputs } from "../src/interpreter";

function inputs(overrides: Partial<InterpreterInputs>): InterpreterInputs {
  return {
    setting: "",
    workspaceFolder: "/work/project",
    home: "/home/ada",
    platform: "linux",
    fromPythonExtension: () => Promise.resolve(undefined),
    ...overrides,
  };
}

describe("resolveInterpreter", () => {
  it("takes the tritonize.interpreter setting first, without asking the Python extension", async () => {
    let asked = false;
    const found = await resolveInterpreter(
      inputs({
        setting: "${workspaceFolder}/.venv/bin/python",
        fromPythonExtension: () => {
          asked = true;
          return Promise.resolve("/usr/bin/python3.12");
        },
      }),
    );
    assert.deepEqual(found, { command: "/work/project/.venv/bin/python", source: "setting" });
    assert.equal(asked, false);
  });

  it("takes the Python extension's selection when the setting is empty or blank", async () => {
    const found = await resolveInterpreter(
      inputs({ setting: "  ", fromPythonExtension: () => Promise.resolve("/opt/conda/envs/gpu/bin/python") }),
    );
    assert.deepEqual(found, { command: "/opt/conda/envs/gpu/bin/python", source: "python-extension" });
  });

  it("falls back to python3 on PATH (python on Windows), also when the Python extension fails", async () => {
    const failing = () => Promise.reject(new Error("extension host crashed"));
    assert.deepEqual(await resolveInterpreter(inputs({ fromPythonExtension: failing })), {
      command: "python3",
      source: "path",
    });
    assert.deepEqual(await resolveInterpreter(inputs({ platform: "win32" })), { command: "python", source: "path" });
  });

  it("says where the interpreter came from", () => {
    assert.equal(describeSource({ command: "python3", source: "path" }), "found on PATH");
    assert.equal(describeSource({ command: "/p", source: "python-extension" }), "selected in the Python extension");
    assert.equal(describeSource({ command: "/p", source: "setting" }), "from the tritonize.interpreter setting");
  });
});

describe("expandPath", () => {
  it("expands ~, ${userHome} and ${workspaceFolder}", () => {
    assert.equal(expandPath("~/venvs/t/bin/python", "/w", "/home/ada"), "/home/ada/venvs/t/bin/python");
    assert.equal(expandPath("${userHome}/py/bin/python", "/w", "/home/ada"), "/home/ada/py/bin/python");
    assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", "/w", "/h"), "/w/.venv/bin/python");
  });

  it("takes a relative path from the workspace and leaves a bare name to PATH", () => {
    assert.equal(expandPath(".venv/bin/python", "/work/project", "/h"), "/work/project/.venv/bin/python");
    assert.equal(expandPath("python3.11", "/work/project", "/h"), "python3.11");
    assert.equal(expandPath(".venv/bin/python", undefined, "/h"), ".venv/bin/python");
  });
});
