// Which Python runs the language server: the `tritonize.interpreter` setting, else the interpreter selected in
// the Python extension, else python3 on PATH. Pure: the editor's parts come in as arguments, so it is unit-tested.
import * as path from "node:path";

export type InterpreterSource = "setting" | "python-extension" | "path";

export interface Interpreter {
  /** An absolute path, or a bare name that is looked up on PATH. */
  readonly command: string;
  readonly source: InterpreterSource;
}

export interface InterpreterInputs {
  /** The `tritonize.interpreter` setting as the user wrote it ("" when unset). */
  readonly setting: string;
  readonly workspaceFolder: string | undefined;
  readonly home: string;
  readonly platform: NodeJS.Platform;
  /** The Python extension's active interpreter for the workspace; undefined when it is not installed. */
  readonly fromPythonExtension: () => Promise<string | undefined>;
}

export async function resolveInterpreter(inputs: InterpreterInputs): Promise<Interpreter> {
  const configured = inputs.setting.trim();
  if (configured) {
    return { command: expandPath(configured, inputs.workspaceFolder, inputs.home), source: "setting" };
  }
  // A broken Python extension must not stop the server from starting with the next choice.
  const selected = await inputs.fromPythonExtension().catch(() => undefined);
  if (selected) {
    return { command: selected, source: "python-extension" };
  }
  return { command: inputs.platform === "win32" ? "python" : "python3", source: "path" };
}

/** `${workspaceFolder}`, `${userHome}` and a leading `~` expanded; a relative path is taken from the workspace. */
export function expandPath(value: string, workspaceFolder: string | undefined, home: string): string {
  let expanded = value.replaceAll("${userHome}", home);
  if (workspaceFolder !== undefined) {
    expanded = expanded.replaceAll("${workspaceFolder}", workspaceFolder);
  }
  if (expanded === "~" || expanded.startsWith("~/")) {
    expanded = path.join(home, expanded.slice(1));
  }
  const bareName = !expanded.includes("/") && !expanded.includes("\\");
  if (bareName || path.isAbsolute(expanded) || workspaceFolder === undefined) {
    return expanded;
  }
  return path.resolve(workspaceFolder, expanded);
}

export function describeSource(interpreter: Interpreter): string {
  switch (interpreter.source) {
    case "setting":
      return "from the tritonize.interpreter setting";
    case "python-extension":
      return "selected in the Python extension";
    case "path":
      return "found on PATH";
  }
}
