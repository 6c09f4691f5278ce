// The language status item (beside the language mode, in Python files, where ruff and Pylance put theirs):
// language server state, model server reachable or not, backend, and a link to the output. The model server's
// /health is polled while the window is open, and checked again after each command.
import * as vscode from "vscode";

import { EXTENSION_COMMANDS } from "./commandIds";
import { checkHealth, statusView, type Health, type ServerState } from "./status";

const POLL_MS = 15_000;

const SEVERITY = {
  information: vscode.LanguageStatusSeverity.Information,
  warning: vscode.LanguageStatusSeverity.Warning,
  error: vscode.LanguageStatusSeverity.Error,
};

export class LanguageStatus implements vscode.Disposable {
  private readonly item = vscode.languages.createLanguageStatusItem("tritonize.status", { language: "python" });
  private readonly timer: NodeJS.Timeout;
  private server: ServerState = "stopped";
  private interpreter: string | undefined;
  private health: Health | undefined;

  constructor() {
    this.item.name = "Tritonize";
    this.item.command = { title: "Show Output", command: EXTENSION_COMMANDS.showOutput };
    this.timer = setInterval(() => void this.refresh(), POLL_MS);
    this.render();
  }

  setServer(state: ServerState, interpreter: string | undefined): void {
    this.server = state;
    this.interpreter = interpreter;
    this.render();
  }

  async refresh(): Promise<void> {
    this.health = await checkHealth(this.settings().get("serverUrl", ""), fetch);
    this.render();
  }

  dispose(): void {
    clearInterval(this.timer);
    this.item.dispose();
  }

  private settings(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration("tritonize");
  }

  private render(): void {
    const settings = this.settings();
    const view = statusView({
      server: this.server,
      health: this.health,
      serverUrl: settings.get("serverUrl", ""),
      backend: settings.get("backend", "inductor"),
      autoStart: settings.get("autoStart", true),
      interpreter: this.interpreter,
    });
    this.item.text = view.text;
    this.item.detail = view.tooltip.split("\n").slice(1).join("; ");
    this.item.severity = SEVERITY[view.severity];
    this.item.busy = view.busy;
    this.item.accessibilityInformation = { label: view.tooltip };
  }
}
