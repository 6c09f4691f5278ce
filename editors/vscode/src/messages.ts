// Every sentence the extension itself shows (the server's own messages come through LSP), and the install it
// offers. Pure, so the wording is unit-tested.
import { describeSource, type Interpreter } from "./interpreter";
import type { ProbeResult } from "./probe";

export const INSTALL_ACTION = "Install tritonize into this interpreter";
export const SELECT_ACTION = "Select Interpreter";
export const OUTPUT_ACTION = "Show Output";
export const RESTART_ACTION = "Restart Server";
export const DONT_SHOW_ACTION = "Don't Show Again";

/** The notification shown when the language server cannot start with `interpreter`. */
export function startFailure(interpreter: Interpreter, failure: Exclude<ProbeResult, { ok: true }>): string {
  const which = `${interpreter.command} (${describeSource(interpreter)})`;
  switch (failure.problem) {
    case "not-found":
      return `Tritonize cannot start its language server: the Python interpreter ${which} was not found. Set tritonize.interpreter or select an interpreter.`;
    case "not-installed":
      return `Tritonize cannot start its language server: tritonize is not installed in ${which} (${failure.detail}).`;
    case "missing-extra":
      return `Tritonize cannot start its language server: tritonize is installed in ${which} without its language server dependencies (${failure.detail}); install it with the [lsp,serve] extras.`;
    case "other":
      return `Tritonize cannot start its language server with ${which}: ${failure.detail}`;
  }
}

/** The same notification when the server started but then failed (the handshake, or a crash at start). */
export function stoppedServer(interpreter: Interpreter, reason: string): string {
  return `The Tritonize language server (${interpreter.command}, ${describeSource(interpreter)}) stopped: ${reason}. See the output for details.`;
}

export function notRunning(command: string): string {
  return `Tritonize: "${command}" needs the language server, which is not running. Restart it, or see the output for why it stopped.`;
}

/** Arguments for the interpreter: an editable install of a tritonize checkout with the extras the editor needs
 *  (the language server, and the model server that autoStart launches). */
export function installArgs(checkout: string): string[] {
  return ["-m", "pip", "install", "-e", `${checkout}[lsp,serve]`];
}

/** Whether a pyproject.toml is tritonize's own: the editable install needs the checkout's root. */
export function isTritonizeCheckout(pyproject: string): boolean {
  let inProject = false;
  for (const line of pyproject.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed.startsWith("[")) {
      inProject = trimmed === "[project]";
    } else if (inProject && /^name\s*=\s*["']tritonize["']$/.test(trimmed)) {
      return true;
    }
  }
  return false;
}

export function tokenSaved(cleared: boolean): string {
  return cleared
    ? "Tritonize: the model server token was removed."
    : "Tritonize: the model server token is saved in VS Code's secret storage and sent with each request.";
}

export const NO_EXAMPLE_INPUTS =
  "Tritonize: no example inputs to add here. Put the cursor inside a top-level function or nn.Module class of a file that has no get_inputs() yet.";

export const NO_REPORT = "Tritonize: no verification report yet. Convert or verify a kernel first.";

export function installFinished(exitCode: number | undefined): string {
  return exitCode === 0
    ? "Tritonize was installed; the language server restarts with it."
    : `Tritonize: the install did not succeed (exit code ${exitCode ?? "unknown"}); see the terminal.`;
}
