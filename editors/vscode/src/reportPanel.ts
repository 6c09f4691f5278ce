// The verification report in a webview beside the editor: verdict, error, speedups, device, coverage and the
// violations, after each Convert and Verify. One panel, reused; no scripts run in it.
import * as vscode from "vscode";

import { reportHtml, type Report } from "./report";

interface Shown {
  readonly title: string;
  readonly subtitle: string;
  readonly report: Report;
}

export class ReportPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private last: Shown | undefined;

  show(title: string, subtitle: string, report: Report): void {
    this.last = { title, subtitle, report };
    this.render();
  }

  /** Shows the last report again; false when there is none yet. */
  showLast(): boolean {
    if (this.last === undefined) {
      return false;
    }
    this.render();
    return true;
  }

  dispose(): void {
    this.panel?.dispose();
  }

  private render(): void {
    const shown = this.last;
    if (shown === undefined) {
      return;
    }
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel(
        "tritonize.report",
        shown.title,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false, enableFindWidget: true },
      );
      this.panel.onDidDispose(() => (this.panel = undefined));
    }
    this.panel.title = shown.title;
    this.panel.webview.html = reportHtml(shown.title, shown.subtitle, shown.report, this.panel.webview.cspSource);
    this.panel.reveal(vscode.ViewColumn.Beside, true);
  }
}
