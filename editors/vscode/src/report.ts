// A verification report (the verifier's JSON, as /v1/verify and Convert return it) made readable: labelled rows
// for the panel, one summary line, and the panel's HTML. Pure, so every field's wording is unit-tested.

export type Report = Record<string, unknown>;

export interface Row {
  readonly label: string;
  readonly value: string;
}

export interface Violation {
  readonly rule: string;
  readonly severity: string;
  readonly line: number;
  readonly message: string;
}

/** A report passes when it is correct and rewarded, or correct under the hybrid policy (never rewarded). */
export function passed(report: Report): boolean {
  return report.verdict === "correct" && (num(report.reward) > 0 || report.policy === "hybrid");
}

export function reportRows(report: Report): Row[] {
  const rows: Row[] = [
    { label: "Verdict", value: verdictText(report) },
    { label: "Max error", value: errorText(report) },
    { label: "Trials", value: text(report.trials) },
    {
      label: "Device",
      value: report.interpreter === true ? `${text(report.device)} (Triton interpreter)` : text(report.device),
    },
    { label: "Speedup vs eager", value: speedupText(report, "speedup_vs_eager", "eager_ms") },
    { label: "Speedup vs torch.compile", value: speedupText(report, "speedup_vs_compile", "compile_ms") },
    { label: "Coverage", value: coverageText(report) },
  ];
  const calls = strings(report.library_calls);
  if (calls.length > 0) {
    rows.push({ label: "Done in PyTorch", value: calls.join(", ") });
  }
  const kernels = strings(report.kernels);
  if (kernels.length > 0) {
    rows.push({ label: "Kernels", value: kernels.join(", ") });
  }
  if (typeof report.message === "string" && report.message) {
    rows.push({ label: "Message", value: report.message });
  }
  return rows;
}

/** One line for messages and the language status item: "correct, max error 2.4e-7, 1.84x vs eager". */
export function summary(report: Report): string {
  const parts = [text(report.verdict)];
  if (typeof report.max_abs_error === "number") {
    parts.push(`max error ${short(report.max_abs_error)}`);
  }
  const eager = record(report.timing).speedup_vs_eager;
  if (typeof eager === "number") {
    parts.push(`${eager.toFixed(2)}x vs eager`);
  }
  return parts.join(", ");
}

export function violations(report: Report): Violation[] {
  const found = Array.isArray(report.violations) ? report.violations : [];
  return found.map((item) => {
    const v = record(item);
    return { rule: text(v.rule), severity: text(v.severity), line: num(v.line), message: text(v.message) };
  });
}

/** The panel's page: a table of the rows, then the violations; no scripts, only inline styles. */
export function reportHtml(title: string, subtitle: string, report: Report, cspSource: string): string {
  const rows = reportRows(report)
    .map((row) => `<tr><th>${escapeHtml(row.label)}</th><td>${escapeHtml(row.value)}</td></tr>`)
    .join("\n");
  const found = violations(report);
  const table = found.length
    ? `<h2>Violations</h2>\n<table class="violations"><tr><th>Rule</th><th>Severity</th><th>Line</th><th>Message</th></tr>\n${found
        .map(
          (v) =>
            `<tr><td>${escapeHtml(v.rule)}</td><td>${escapeHtml(v.severity)}</td><td>${v.line || ""}</td><td>${escapeHtml(v.message)}</td></tr>`,
        )
        .join("\n")}</table>`
    : "";
  const badge = passed(report) ? "pass" : "fail";
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline';">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
.subtitle { color: var(--vscode-descriptionForeground); }
table { border-collapse: collapse; }
th, td { text-align: left; vertical-align: top; padding: 4px 12px 4px 0; border-bottom: 1px solid var(--vscode-widget-border, transparent); }
th { font-weight: 600; white-space: nowrap; }
.badge { padding: 1px 8px; border-radius: 8px; color: var(--vscode-badge-foreground); }
.pass { background: var(--vscode-testing-iconPassed, #388a34); } .fail { background: var(--vscode-testing-iconFailed, #c72e0f); }
</style>
</head>
<body>
<h1>${escapeHtml(title)} <span class="badge ${badge}" id="verdict">${escapeHtml(text(report.verdict))}</span></h1>
<p class="subtitle">${escapeHtml(subtitle)}</p>
<table class="report">
${rows}
</table>
${table}
</body>
</html>
`;
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function verdictText(report: Report): string {
  const verdict = text(report.verdict);
  const policy = typeof report.policy === "string" ? `, ${report.policy} policy` : "";
  return `${verdict} (reward ${num(report.reward)}${policy})`;
}

function errorText(report: Report): string {
  if (typeof report.max_abs_error !== "number") {
    return "not measured";
  }
  const relative = typeof report.max_rel_error === "number" ? `, relative ${short(report.max_rel_error)}` : "";
  const tolerance = record(report.tolerance);
  const within =
    typeof tolerance.atol === "number" && typeof tolerance.rtol === "number"
      ? ` (tolerance atol ${short(tolerance.atol)}, rtol ${short(tolerance.rtol)})`
      : "";
  return `absolute ${short(report.max_abs_error)}${relative}${within}`;
}

function speedupText(report: Report, speedup: string, baseline: string): string {
  const timing = record(report.timing);
  const value = timing[speedup];
  if (typeof value !== "number") {
    return report.device === "cpu" ? "not timed (timing needs a GPU)" : "not measured";
  }
  const candidate = timing.candidate_ms;
  const reference = timing[baseline];
  const times =
    typeof candidate === "number" && typeof reference === "number"
      ? ` (${short(candidate)} ms vs ${short(reference)} ms)`
      : "";
  return `${value.toFixed(2)}x${times}`;
}

function coverageText(report: Report): string {
  if (typeof report.coverage !== "number") {
    return "not measured";
  }
  const basis = report.device === "cpu" ? "calls" : "GPU kernel time";
  return `${Math.round(report.coverage * 100)}% of the ${basis} in Triton`;
}

/** Two significant digits, as the server's own messages print errors ("2.4e-7", "0.12", "150"). */
function short(value: number): string {
  if (value === 0) {
    return "0";
  }
  const rounded = Number(value.toPrecision(2));
  const magnitude = Math.abs(rounded);
  return magnitude < 1e-4 || magnitude >= 1e6 ? rounded.toExponential() : rounded.toString();
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

function num(value: unknown): number {
  return typeof value === "number" ? value : 0;
}

/** A scalar field as text; anything else (missing, null, an object) is "unknown". */
function text(value: unknown): string {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : "unknown";
}
