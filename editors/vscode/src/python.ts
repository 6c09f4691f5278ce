// The Python extension's environments API (ms-python.python), used when it is installed: the interpreter the user
// selected for the workspace, and an event when that selection changes. Only the calls used here are typed.
import * as vscode from "vscode";

interface EnvironmentPath {
  readonly path: string;
}

interface ResolvedEnvironment {
  readonly executable: { readonly uri?: vscode.Uri };
}

interface EnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
  resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
  readonly onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

const PYTHON_EXTENSION = "ms-python.python";

async function environments(): Promise<EnvironmentsApi | undefined> {
  const extension = vscode.extensions.getExtension<{ environments?: EnvironmentsApi }>(PYTHON_EXTENSION);
  if (extension === undefined) {
    return undefined;
  }
  const api = extension.isActive ? extension.exports : await extension.activate();
  return api?.environments;
}

export function pythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION) !== undefined;
}

/** The executable of the environment selected for `resource`, or undefined without the Python extension. */
export async function selectedInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const api = await environments();
  if (api === undefined) {
    return undefined;
  }
  const resolved = await api.resolveEnvironment(api.getActiveEnvironmentPath(resource));
  return resolved?.executable.uri?.fsPath;
}

/** Calls `listener` whenever the selected interpreter changes (nothing happens without the Python extension). */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await environments();
  return api?.onDidChangeActiveEnvironmentPath(listener);
}
