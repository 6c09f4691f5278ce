// "Install tritonize into this interpreter": an editable pip install of a tritonize checkout (the workspace if it
// is one, else a folder the user picks) run as a visible task, then a server restart once it succeeds.
import * as vscode from "vscode";

import { installArgs, installFinished, isTritonizeCheckout } from "./messages";

export async function installInto(python: string, restart: () => Promise<void>): Promise<void> {
  const checkout = (await checkoutInWorkspace()) ?? (await pickCheckout());
  if (checkout === undefined) {
    return;
  }
  const task = new vscode.Task(
    { type: "tritonize", action: "install" },
    vscode.TaskScope.Workspace,
    "Install tritonize",
    "tritonize",
    new vscode.ProcessExecution(python, installArgs(checkout)),
  );
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, clear: true };
  const execution = await vscode.tasks.executeTask(task);
  const ended = vscode.tasks.onDidEndTaskProcess(async (event) => {
    if (event.execution !== execution) {
      return;
    }
    ended.dispose();
    const message = installFinished(event.exitCode);
    if (event.exitCode === 0) {
      void vscode.window.showInformationMessage(message);
      await restart();
    } else {
      void vscode.window.showErrorMessage(message);
    }
  });
}

async function checkoutInWorkspace(): Promise<string | undefined> {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    if (await isCheckout(folder.uri)) {
      return folder.uri.fsPath;
    }
  }
  return undefined;
}

async function pickCheckout(): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    canSelectFolders: true,
    canSelectFiles: false,
    title: "The tritonize checkout to install (the folder with its pyproject.toml)",
    openLabel: "Install from this checkout",
  });
  const folder = picked?.[0];
  if (folder === undefined) {
    return undefined;
  }
  if (!(await isCheckout(folder))) {
    void vscode.window.showErrorMessage(
      `Tritonize: ${folder.fsPath} is not a tritonize checkout (no pyproject.toml naming tritonize).`,
    );
    return undefined;
  }
  return folder.fsPath;
}

async function isCheckout(folder: vscode.Uri): Promise<boolean> {
  try {
    const bytes = await vscode.workspace.fs.readFile(vscode.Uri.joinPath(folder, "pyproject.toml"));
    return isTritonizeCheckout(new TextDecoder().decode(bytes));
  } catch {
    return false;
  }
}
