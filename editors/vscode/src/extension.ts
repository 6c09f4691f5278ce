// Entry point: wires the language server, the language status item, the report panel and the commands together, and
// restarts the server when the interpreter changes (the setting, or the Python extension's selection).
import * as vscode from "vscode";

import { registerCommands } from "./commands";
import { watchContextKeys } from "./contextKeys";
import { installInto } from "./install";
import type { Interpreter } from "./interpreter";
import { LanguageServer, TOKEN_KEY } from "./languageServer";
import { DONT_SHOW_ACTION, INSTALL_ACTION, OUTPUT_ACTION, SELECT_ACTION, startFailure } from "./messages";
import type { ProbeResult } from "./probe";
import { onInterpreterChange, pythonExtensionInstalled } from "./python";
import { ReportPanel } from "./reportPanel";
import { asResult, createdFile, reportHeading } from "./results";
import { LanguageStatus } from "./languageStatus";

let server: LanguageServer | undefined;
// The start failure is said once per window; "Don't Show Again" silences it for the workspace (the status item
// still says the server is not running, and its menu leads to the same fixes).
const HIDE_START_FAILURE_KEY = "tritonize.hideStartFailure";
let startFailureShown = false;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("Tritonize");
  const status = new LanguageStatus();
  const panel = new ReportPanel();
  context.subscriptions.push(output, status, panel);

  const languageServer = new LanguageServer(context, output, {
    stateChanged: (state, interpreter) => {
      status.setServer(state, interpreter?.command);
      void status.refresh();
    },
    startFailed: (interpreter, failure) => {
      if (startFailureShown || context.workspaceState.get(HIDE_START_FAILURE_KEY, false)) {
        return;
      }
      startFailureShown = true;
      void offerFixes(interpreter, failure, output, () => languageServer.restart()).then(async (hide) => {
        if (hide) {
          await context.workspaceState.update(HIDE_START_FAILURE_KEY, true);
        }
      });
    },
    commandFinished: async (command, args, result) => {
      const parsed = asResult(result);
      if (parsed !== undefined) {
        const created = createdFile(args, parsed);
        if (created !== undefined) {
          const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(created));
          if (document.isDirty) {
            await document.save();
          }
        }
        const heading = reportHeading(command, args, parsed);
        if (heading !== undefined && parsed.report !== undefined) {
          panel.show(heading.title, heading.subtitle, parsed.report);
        }
      }
      await status.refresh();
    },
  });
  server = languageServer;
  context.subscriptions.push(languageServer);
  registerCommands(context, languageServer, panel, output);
  watchContextKeys(context);

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("tritonize.interpreter")) {
        void languageServer.restart();
      } else if (event.affectsConfiguration("tritonize")) {
        languageServer.settingsChanged();
        void status.refresh();
      }
    }),
    context.secrets.onDidChange((event) => {
      if (event.key === TOKEN_KEY) {
        languageServer.settingsChanged();
      }
    }),
  );
  void onInterpreterChange(() => {
    if (!vscode.workspace.getConfiguration("tritonize").get("interpreter", "")) {
      void languageServer.restart();
    }
  }).then((listener) => listener && context.subscriptions.push(listener));

  void languageServer.restart();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}

/** The start failure, with the ways out: install tritonize there, pick another interpreter, read the output.
 *  True when the user asked not to see it again in this workspace. */
async function offerFixes(
  interpreter: Interpreter,
  failure: Exclude<ProbeResult, { ok: true }>,
  output: vscode.OutputChannel,
  restart: () => Promise<void>,
): Promise<boolean> {
  const fixes =
    failure.problem === "not-found" ? [SELECT_ACTION, OUTPUT_ACTION] : [INSTALL_ACTION, SELECT_ACTION, OUTPUT_ACTION];
  const choice = await vscode.window.showErrorMessage(startFailure(interpreter, failure), ...fixes, DONT_SHOW_ACTION);
  if (choice === DONT_SHOW_ACTION) {
    return true;
  }
  if (choice === INSTALL_ACTION) {
    await installInto(interpreter.command, restart);
  } else if (choice === SELECT_ACTION) {
    if (pythonExtensionInstalled()) {
      await vscode.commands.executeCommand("python.setInterpreter");
    } else {
      await vscode.commands.executeCommand("workbench.action.openSettings", "tritonize.interpreter");
    }
  } else if (choice === OUTPUT_ACTION) {
    output.show();
  }
  return false;
}
