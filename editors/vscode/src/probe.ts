// Before the language server starts: can this interpreter import it? A failed import becomes one plain sentence
// (missing interpreter, tritonize not installed, or installed without the language server's extra) instead of a
// crashed-server loop with a traceback.
import { execFile } from "node:child_process";

/** Importing the server module loads pygls and lsprotocol too, so a missing `[lsp]` extra shows here. */
export const PROBE_ARGS = ["-c", "import lsp_server.server"];
const PROBE_TIMEOUT_MS = 30_000;

export type ProbeResult =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly problem: "not-found" | "not-installed" | "missing-extra" | "other";
      readonly detail: string;
    };

export function probe(command: string, cwd: string | undefined, env: NodeJS.ProcessEnv): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(command, PROBE_ARGS, { cwd, env, timeout: PROBE_TIMEOUT_MS }, (error, _stdout, stderr) => {
      if (error === null) {
        resolve({ ok: true });
      } else if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        resolve({ ok: false, problem: "not-found", detail: `${command} does not exist` });
      } else {
        resolve(explainFailure(stderr || error.message));
      }
    });
  });
}

/** What a failed import printed, reduced to the problem and its last line. */
export function explainFailure(stderr: string): ProbeResult {
  const lines = stderr.trim().split("\n");
  const detail = (lines[lines.length - 1] ?? "").trim();
  const missing = /No module named '([\w.]+)'/.exec(detail)?.[1]?.split(".")[0];
  if (missing === "lsp_server" || missing === "verifier" || missing === "model_server") {
    return { ok: false, problem: "not-installed", detail };
  }
  if (missing === "pygls" || missing === "lsprotocol" || missing === "httpx") {
    return { ok: false, problem: "missing-extra", detail };
  }
  return { ok: false, problem: "other", detail: detail || "the interpreter failed without a message" };
}
