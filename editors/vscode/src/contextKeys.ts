// Keeps the `tritonize.canConvert` and `tritonize.canVerify` context keys (package.json's menu `when` clauses)
// in step with the active editor and its cursor.
import * as vscode from "vscode";

import { applicability } from "./applicability";

const DELAY_MS = 100;

export function watchContextKeys(context: vscode.ExtensionContext): void {
  let timer: NodeJS.Timeout | undefined;
  const update = (): void => {
    const editor = vscode.window.activeTextEditor;
    const python = editor?.document.languageId === "python";
    const keys = python
      ? applicability(editor.document.getText(), editor.selection.active.line)
      : { canConvert: false, canVerify: false };
    void vscode.commands.executeCommand("setContext", "tritonize.canConvert", keys.canConvert);
    void vscode.commands.executeCommand("setContext", "tritonize.canVerify", keys.canVerify);
  };
  const soon = (): void => {
    clearTimeout(timer);
    timer = setTimeout(update, DELAY_MS);
  };
  context.subscriptions.push(
    vscode.window.onDidChangeActiveTextEditor(update),
    vscode.window.onDidChangeTextEditorSelection(soon),
    vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.document === vscode.window.activeTextEditor?.document) {
        soon();
      }
    }),
    { dispose: () => clearTimeout(timer) },
  );
  update();
}
