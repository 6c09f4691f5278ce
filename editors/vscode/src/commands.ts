// The extension's own commands (palette and editor context menu). Convert and Verify run the server's commands
// through vscode-languageclient, so they get the same cancellable notification and report as the code actions.
import * as vscode from "vscode";

import { EXTENSION_COMMANDS, SERVER_COMMANDS } from "./commandIds";
import { TOKEN_KEY, type LanguageServer } from "./languageServer";
import { NO_EXAMPLE_INPUTS, NO_REPORT, OUTPUT_ACTION, RESTART_ACTION, notRunning, tokenSaved } from "./messages";
import type { ReportPanel } from "./reportPanel";

/** The server's code action that adds `get_inputs()` (kind `refactor.tritonize.inputs`); its title is
 *  "Add example inputs for NAME (get_inputs)". */
const EXAMPLE_INPUTS_TITLE = "Add example inputs for ";
const EXAMPLE_INPUTS_KIND = "refactor.tritonize.inputs";

export function registerCommands(
  context: vscode.ExtensionContext,
  server: LanguageServer,
  panel: ReportPanel,
  output: vscode.OutputChannel,
): void {
  const register = (id: string, run: () => unknown): void => {
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  };

  const needsServer = async (label: string): Promise<boolean> => {
    if (server.running) {
      return true;
    }
    const choice = await vscode.window.showWarningMessage(notRunning(label), RESTART_ACTION, OUTPUT_ACTION);
    if (choice === RESTART_ACTION) {
      await server.restart();
    } else if (choice === OUTPUT_ACTION) {
      output.show();
    }
    return false;
  };

  register(EXTENSION_COMMANDS.convertHere, async () => {
    const editor = pythonEditor();
    if (editor !== undefined && (await needsServer("Convert to Triton"))) {
      const argument = { uri: editor.document.uri.toString(), line: editor.selection.active.line };
      await vscode.commands.executeCommand(SERVER_COMMANDS.convert, argument);
    }
  });

  register(EXTENSION_COMMANDS.verifyHere, async () => {
    const editor = pythonEditor();
    if (editor !== undefined && (await needsServer("Verify this Kernel"))) {
      await vscode.commands.executeCommand(SERVER_COMMANDS.verify, { uri: editor.document.uri.toString() });
    }
  });

  register(EXTENSION_COMMANDS.addExampleInputs, async () => {
    const editor = pythonEditor();
    if (editor === undefined || !(await needsServer("Add Example Inputs"))) {
      return;
    }
    const here = new vscode.Range(editor.selection.active, editor.selection.active);
    const actions =
      (await vscode.commands.executeCommand<vscode.CodeAction[] | undefined>(
        "vscode.executeCodeActionProvider",
        editor.document.uri,
        here,
        EXAMPLE_INPUTS_KIND,
      )) ?? [];
    const action = actions.find((item) => item.title.startsWith(EXAMPLE_INPUTS_TITLE) && item.edit !== undefined);
    if (action?.edit === undefined) {
      void vscode.window.showInformationMessage(NO_EXAMPLE_INPUTS);
      return;
    }
    await vscode.workspace.applyEdit(action.edit);
  });

  register(EXTENSION_COMMANDS.showReport, () => {
    if (!panel.showLast()) {
      void vscode.window.showInformationMessage(NO_REPORT);
    }
  });

  register(EXTENSION_COMMANDS.setToken, async () => {
    const token = await vscode.window.showInputBox({
      title: "Tritonize: model server token",
      prompt: "The bearer token of a server started with `tritonize serve --token` (empty to remove the saved one)",
      password: true,
      ignoreFocusOut: true,
    });
    if (token === undefined) {
      return;
    }
    if (token) {
      await context.secrets.store(TOKEN_KEY, token);
    } else {
      await context.secrets.delete(TOKEN_KEY);
    }
    void vscode.window.showInformationMessage(tokenSaved(!token));
  });

  register(EXTENSION_COMMANDS.restartServer, () => server.restart());
  register(EXTENSION_COMMANDS.showOutput, () => output.show());
}

function pythonEditor(): vscode.TextEditor | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.languageId !== "python") {
    void vscode.window.showInformationMessage("Tritonize: open a Python file first.");
    return undefined;
  }
  return editor;
}
