import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { EXTENSION_COMMANDS, LONG_RUNNING, SERVER_COMMANDS } from "../src/commandIds";

const root = path.join(__dirname, "..", "..");
interface Manifest {
  main: string;
  icon: string;
  engines: { vscode: string };
  activationEvents: string[];
  devDependencies: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
  };
}
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as Manifest;

describe("package.json", () => {
  it("contributes exactly the commands the extension registers, under one category", () => {
    const contributed = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(contributed, Object.values(EXTENSION_COMMANDS).sort());
    assert.ok(manifest.contributes.commands.every((c) => c.category === "Tritonize"));
    const serverIds: string[] = Object.values(SERVER_COMMANDS);
    assert.ok(
      contributed.every((id) => !serverIds.includes(id)),
      "server commands are registered by the client",
    );
  });

  it("puts Convert, Verify and Add example inputs in the Python editor's context menu", () => {
    const context = manifest.contributes.menus["editor/context"] ?? [];
    assert.deepEqual(
      context.map((item) => item.command),
      [EXTENSION_COMMANDS.convertHere, EXTENSION_COMMANDS.verifyHere, EXTENSION_COMMANDS.addExampleInputs],
    );
    assert.deepEqual(
      context.map((item) => item.when),
      [
        "editorLangId == python && resourcePath in tritonize.convertible",
        "editorLangId == python && resourcePath in tritonize.verifiable",
        "editorLangId == python && resourcePath in tritonize.convertible",
      ],
    );
  });

  it("runs the long server commands under a notification", () => {
    assert.deepEqual([...LONG_RUNNING.keys()], [SERVER_COMMANDS.convert, SERVER_COMMANDS.verify]);
  });

  it("activates on Python files, with an engine no older than its API types", () => {
    assert.deepEqual(manifest.activationEvents, ["onLanguage:python"]);
    assert.equal(manifest.engines.vscode, `^${manifest.devDependencies["@types/vscode"]}`);
    assert.equal(manifest.main, "./dist/extension.js");
    assert.ok(existsSync(path.join(root, manifest.icon)));
  });
});
