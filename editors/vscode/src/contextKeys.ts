// Keeps the context keys of package.json's menu `when` clauses: `tritonize.convertible` and
// `tritonize.verifiable`, the paths of the open Python files where Convert (and Add example inputs) and Verify
// apply. Keyed by file, so the menu reads the right answer for whichever editor it opens on, with no race against
// focus: a key of the active editor alone would be set only after a right-click that also moved the focus.
import * as vscode from "vscode";

import { applicability } from "./applicability";

const DELAY_MS = 300;

export function watchContextKeys(context: vscode.ExtensionContext): void {
  const convertible = new Set<string>();
  const verifiable = new Set<string>();
  const timers = new Map<string, NodeJS.Timeout>();
  const publish = (): void => {
    void vscode.commands.executeCommand("setContext", "tritonize.convertible", [...convertible]);
    void vscode.commands.executeCommand("setContext", "tritonize.verifiable", [...verifiable]);
  };
  const update = (document: vscode.TextDocument): void => {
    const path = document.uri.fsPath;
    const keys =
      document.languageId === "python" && document.uri.scheme === "file"
        ? applicability(document.getText())
        : { canConvert: false, canVerify: false };
    const changed = convertible.has(path) !== keys.canConvert || verifiable.has(path) !== keys.canVerify;
    toggle(convertible, path, keys.canConvert);
    toggle(verifiable, path, keys.canVerify);
    if (changed) {
      publish();
    }
  };
  context.subscriptions.push(
    vscode.workspace.onDidOpenTextDocument(update),
    vscode.workspace.onDidChangeTextDocument(({ document }) => {
      clearTimeout(timers.get(document.uri.fsPath));
      timers.set(
        document.uri.fsPath,
        setTimeout(() => update(document), DELAY_MS),
      );
    }),
    vscode.workspace.onDidCloseTextDocument((document) => {
      clearTimeout(timers.get(document.uri.fsPath));
      timers.delete(document.uri.fsPath);
      convertible.delete(document.uri.fsPath);
      verifiable.delete(document.uri.fsPath);
      publish();
    }),
    { dispose: () => timers.forEach((timer) => clearTimeout(timer)) },
  );
  vscode.workspace.textDocuments.forEach(update);
  publish();
}

function toggle(set: Set<string>, path: string, on: boolean): void {
  if (on) {
    set.add(path);
  } else {
    set.delete(path);
  }
}
