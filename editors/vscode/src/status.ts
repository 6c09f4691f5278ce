// What the language status item says: the language server's state, whether the model server answers, and the
// backend. Pure: languageStatus.ts shows it.

export type ServerState = "starting" | "running" | "stopped" | "failed";

/** The model server's `/health` answer, or why there was none. */
export type Health =
  | { readonly reachable: true; readonly backend: string; readonly device: string; readonly conversions: number }
  | { readonly reachable: false; readonly reason: string };

export interface StatusInputs {
  readonly server: ServerState;
  readonly health: Health | undefined;
  readonly serverUrl: string;
  readonly backend: string;
  readonly autoStart: boolean;
  readonly interpreter: string | undefined;
}

export interface StatusView {
  readonly text: string;
  readonly tooltip: string;
  /** The item's severity: an error when the language server is not running. */
  readonly severity: "information" | "warning" | "error";
  /** The language server is starting, or the model server is converting. */
  readonly busy: boolean;
}

export function statusView(inputs: StatusInputs): StatusView {
  const { server, health } = inputs;
  const backend = health?.reachable ? health.backend : inputs.backend;
  const icon =
    server === "starting"
      ? "$(loading~spin)"
      : server === "running"
        ? serverIcon(health, inputs.autoStart)
        : "$(error)";
  const busy = health?.reachable && health.conversions > 0 ? ` (${health.conversions} running)` : "";
  return {
    text: `${icon} Tritonize: ${backend}${busy}`,
    tooltip: [
      `Language server: ${server}${inputs.interpreter ? ` (${inputs.interpreter})` : ""}`,
      `Model server: ${modelServerLine(health, inputs.serverUrl, inputs.autoStart)}`,
      `Backend: ${backend}`,
    ].join("\n"),
    severity:
      server === "failed" || server === "stopped"
        ? "error"
        : health?.reachable === false && !inputs.autoStart
          ? "warning"
          : "information",
    busy: server === "starting" || (health?.reachable === true && health.conversions > 0),
  };
}

function serverIcon(health: Health | undefined, autoStart: boolean): string {
  if (health === undefined || health.reachable) {
    return "$(zap)";
  }
  return autoStart ? "$(circle-outline)" : "$(debug-disconnect)";
}

function modelServerLine(health: Health | undefined, url: string, autoStart: boolean): string {
  if (health === undefined) {
    return `checking ${url}`;
  }
  if (health.reachable) {
    return `reachable at ${url} (${health.backend} on ${health.device})`;
  }
  const next = autoStart
    ? "it starts with the first conversion"
    : "start it with `tritonize serve` or turn on tritonize.autoStart";
  return `not reachable at ${url} (${health.reason}); ${next}`;
}

/** GET /health with a time limit; `fetchFn` is the global fetch in the editor and a fake in tests. */
export async function checkHealth(url: string, fetchFn: typeof fetch, timeoutMs = 2000): Promise<Health> {
  try {
    const response = await fetchFn(`${url.replace(/\/+$/, "")}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) {
      return { reachable: false, reason: `HTTP ${response.status}` };
    }
    const body = (await response.json()) as Record<string, unknown>;
    return {
      reachable: true,
      backend: typeof body.backend === "string" ? body.backend : "unknown",
      device: typeof body.device === "string" ? body.device : "unknown",
      conversions: typeof body.conversions === "number" ? body.conversions : 0,
    };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    const name = (error as Error).name === "TimeoutError" ? "no answer in time" : (cause ?? (error as Error).message);
    return { reachable: false, reason: name };
  }
}
