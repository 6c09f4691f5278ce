// The language client: starts `python -m lsp_server` (what `tritonize lsp` runs) over stdio with the resolved
// interpreter, restarts it on request, and adds what vscode-languageclient lacks: the settings section (token from
// secret storage) for workspace/configuration, and a cancellable notification with the server's progress for the
// long commands.
import * as os from "node:os";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type ConfigurationParams,
  type LanguageClientOptions,
} from "vscode-languageclient/node";

import { LONG_RUNNING } from "./commandIds";
import { describeSource, resolveInterpreter, type Interpreter } from "./interpreter";
import { stoppedServer } from "./messages";
import { probe, type ProbeResult } from "./probe";
import { ProgressRouter } from "./progressRouter";
import { selectedInterpreter } from "./python";
import { SECTION, serverKeys, serverSettings } from "./settings";
import type { ServerState } from "./status";

export const TOKEN_KEY = "tritonize.token";
const SERVER_ARGS = ["-m", "lsp_server"];
const CLIENT_STATES: Record<State, ServerState> = {
  [State.Starting]: "starting",
  [State.Running]: "running",
  [State.Stopped]: "stopped",
};

export interface ServerEvents {
  /** The server's state changed (the language status item shows it). */
  stateChanged(state: ServerState, interpreter: Interpreter | undefined): void;
  /** The interpreter cannot run the server: tell the user, with a way out. */
  startFailed(interpreter: Interpreter, failure: Exclude<ProbeResult, { ok: true }>): void;
  /** A long command finished with `result` (shown as a report, the created file saved). */
  commandFinished(command: string, args: unknown[], result: unknown): Promise<void>;
}

export class LanguageServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private interpreter: Interpreter | undefined;
  private state: ServerState = "stopped";
  private queue: Promise<void> = Promise.resolve();
  private readonly router = new ProgressRouter();
  private readonly keys: string[];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
    private readonly events: ServerEvents,
  ) {
    const manifest = context.extension.packageJSON as {
      contributes: { configuration: { properties: Record<string, unknown> } };
    };
    this.keys = serverKeys(manifest.contributes.configuration.properties);
  }

  get running(): boolean {
    return this.state === "running";
  }

  /** Stop (if running) and start again; calls are queued, so two quick restarts never overlap. */
  restart(): Promise<void> {
    this.queue = this.queue.then(async () => {
      await this.stopClient();
      await this.startClient();
    });
    return this.queue;
  }

  stop(): Promise<void> {
    this.queue = this.queue.then(() => this.stopClient());
    return this.queue;
  }

  /** The settings or the token changed: the server asks for the section again (workspace/configuration). */
  settingsChanged(): void {
    if (this.client !== undefined && this.running) {
      void this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    }
  }

  dispose(): void {
    void this.stop();
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.events.stateChanged(state, this.interpreter);
  }

  private async startClient(): Promise<void> {
    this.setState("starting");
    const folder = vscode.workspace.workspaceFolders?.[0];
    const interpreter = await resolveInterpreter({
      setting: vscode.workspace.getConfiguration(SECTION).get("interpreter", ""),
      workspaceFolder: folder?.uri.fsPath,
      home: os.homedir(),
      platform: process.platform,
      fromPythonExtension: () => selectedInterpreter(folder?.uri),
    });
    this.interpreter = interpreter;
    this.output.appendLine(`Python: ${interpreter.command} (${describeSource(interpreter)})`);
    const cwd = folder?.uri.fsPath;
    const checked = await probe(interpreter.command, cwd, process.env);
    if (!checked.ok) {
      this.output.appendLine(`The language server cannot start: ${checked.detail}`);
      this.setState("failed");
      this.events.startFailed(interpreter, checked);
      return;
    }
    const client = new LanguageClient(
      "tritonize",
      "Tritonize",
      { command: interpreter.command, args: SERVER_ARGS, options: { cwd, env: process.env } },
      await this.clientOptions(),
    );
    // The client restarts a crashed server by itself (a few times): follow its state from here on.
    client.onDidChangeState((change) => {
      if (this.client === client) {
        this.setState(CLIENT_STATES[change.newState]);
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.client = undefined;
      this.setState("failed");
      const message = stoppedServer(interpreter, error instanceof Error ? error.message : String(error));
      void vscode.window.showErrorMessage(message);
    }
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) {
      return;
    }
    if (client.needsStop()) {
      await client.stop().catch((error: unknown) => this.output.appendLine(`Stopping the server: ${String(error)}`));
    }
    this.setState("stopped");
  }

  private async clientOptions(): Promise<LanguageClientOptions> {
    return {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
      ],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: { [SECTION]: this.section(undefined, await this.token()) },
      middleware: {
        executeCommand: (command, args, next) => this.execute(command, args, next),
        handleWorkDoneProgress: (token, params, next) => {
          if (!this.router.route(token, params) || params.kind === "end") {
            next(token, params);
          }
        },
        workspace: {
          configuration: async (params: ConfigurationParams, token, next) => {
            const answers: unknown = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers as never;
            }
            const secret = await this.token();
            return params.items.map((item, index): unknown =>
              item.section === SECTION ? this.section(item.scopeUri, secret) : answers[index],
            );
          },
        },
      },
    };
  }

  /** The server's settings section for one file (resource-scoped settings differ per folder). */
  private section(scopeUri: string | undefined, token: string | undefined): Record<string, unknown> {
    const configuration = vscode.workspace.getConfiguration(SECTION, scopeUri ? vscode.Uri.parse(scopeUri) : undefined);
    return serverSettings(this.keys, (key) => configuration.get(key), token);
  }

  private async token(): Promise<string | undefined> {
    return this.context.secrets.get(TOKEN_KEY);
  }

  /** Long commands run under a cancellable notification that shows the server's progress; cancelling sends
   *  $/cancelRequest, which stops the conversion on the model server too. The notification closes when the server
   *  ends its progress, so it is gone by the time the refactor preview asks the user. */
  private async execute(
    command: string,
    args: unknown[],
    next: (command: string, args: unknown[]) => unknown,
  ): Promise<unknown> {
    const title = LONG_RUNNING.get(command);
    const client = this.client;
    if (title === undefined || client === undefined) {
      return next(command, args);
    }
    const result = await new Promise<unknown>((settle, fail) => {
      const options = { location: vscode.ProgressLocation.Notification, title, cancellable: true };
      void vscode.window.withProgress(options, (progress, cancel) => {
        return new Promise<void>((hide) => {
          const report = (message: string | undefined, increment: number | undefined) =>
            progress.report({ message, increment });
          const close = this.router.open({ report, end: hide });
          const failed = (error: unknown) =>
            cancel.isCancellationRequested ? settle({ status: "cancelled" }) : fail(asError(error));
          client
            .sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, cancel)
            .then(settle, failed)
            .finally(() => {
              close();
              hide();
            });
        });
      });
    });
    await this.events.commandFinished(command, args, result);
    return result;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
