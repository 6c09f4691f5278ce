// What the server's convert and verify commands return (`{status, report?, uri?, summary?, message?}`), read
// defensively, and what the extension does with it. Pure.
import { SERVER_COMMANDS } from "./commandIds";
import type { Report } from "./report";

export interface CommandResult {
  readonly status: string;
  readonly report: Report | undefined;
  readonly uri: string | undefined;
  readonly summary: string | undefined;
}

export function asResult(value: unknown): CommandResult | undefined {
  if (typeof value !== "object" || value === null || typeof (value as { status?: unknown }).status !== "string") {
    return undefined;
  }
  const raw = value as Record<string, unknown>;
  const report = raw.report;
  return {
    status: raw.status as string,
    report: typeof report === "object" && report !== null ? (report as Report) : undefined,
    uri: typeof raw.uri === "string" ? raw.uri : undefined,
    summary: typeof raw.summary === "string" ? raw.summary : undefined,
  };
}

/** The uri the command was run on (its one argument object's `uri`). */
export function targetUri(args: readonly unknown[]): string | undefined {
  const first = args[0];
  const uri = typeof first === "object" && first !== null ? (first as { uri?: unknown }).uri : undefined;
  return typeof uri === "string" ? uri : undefined;
}

/** A kernel file that Convert created beside the source: saved at once, so it exists on disk like the file the
 *  server itself writes for editors that cannot create files. Edits to the user's own file stay unsaved. */
export function createdFile(args: readonly unknown[], result: CommandResult): string | undefined {
  const source = targetUri(args);
  return result.status === "applied" && result.uri !== undefined && result.uri !== source ? result.uri : undefined;
}

/** The report panel's title and subtitle for a finished command, or undefined when it has no report to show. */
export function reportHeading(
  command: string,
  args: readonly unknown[],
  result: CommandResult,
): { title: string; subtitle: string } | undefined {
  if (result.report === undefined) {
    return undefined;
  }
  const file = baseName(result.uri ?? targetUri(args) ?? "");
  if (command === SERVER_COMMANDS.verify) {
    return {
      title: `Verified ${file}`,
      subtitle: "Checked against the task named on its # tritonize-task: line.",
    };
  }
  const placed = result.status === "applied" ? "" : ` (${result.status})`;
  return { title: `Converted to Triton: ${file}${placed}`, subtitle: result.summary ?? "" };
}

function baseName(uri: string): string {
  const path = decodeURIComponent(uri.replace(/^[a-z][\w+.-]*:\/\/[^/]*/i, ""));
  return path.slice(path.lastIndexOf("/") + 1);
}
