// Puts the server's work-done progress ("round 1: candidate 3/8 incorrect (max err 0.2)") into the cancellable
// notification that a command opened. vscode-languageclient would show it in the status bar only, without the
// messages that carry no percentage; the notification is where the user can also cancel. Pure (no `vscode`).

export interface ProgressSink {
  /** `message` is undefined when the server sent only a percentage. */
  report(message: string | undefined, increment: number | undefined): void;
  /** The server ended its progress: the work is done, though the command may still be placing its result. */
  end(): void;
}

/** The `value` of a `$/progress` notification for work-done progress. */
export interface WorkDone {
  readonly kind: "begin" | "report" | "end";
  readonly title?: string;
  readonly message?: string;
  readonly percentage?: number;
}

type Token = string | number;

export class ProgressRouter {
  private readonly waiting: ProgressSink[] = [];
  private readonly routed = new Map<Token, { sink: ProgressSink; percentage: number }>();

  /** A command's notification is open: the next progress the server begins is shown there. Call the result when
   *  the notification closes. */
  open(sink: ProgressSink): () => void {
    this.waiting.push(sink);
    return () => {
      const index = this.waiting.indexOf(sink);
      if (index >= 0) {
        this.waiting.splice(index, 1);
      }
      for (const [token, entry] of this.routed) {
        if (entry.sink === sink) {
          this.routed.delete(token);
        }
      }
    };
  }

  /** Show `value` in a notification; false when no notification takes it (the client's default shows it then).
   *  An `end` is routed too, but the client must still see it to close its own record of the token. */
  route(token: Token, value: WorkDone): boolean {
    if (value.kind === "begin") {
      const sink = this.waiting.shift();
      if (sink === undefined) {
        return false;
      }
      this.routed.set(token, { sink, percentage: 0 });
    }
    const entry = this.routed.get(token);
    if (entry === undefined) {
      return false;
    }
    if (value.kind === "end") {
      this.routed.delete(token);
      entry.sink.end();
      return true;
    }
    let increment: number | undefined;
    if (typeof value.percentage === "number") {
      const percentage = Math.max(entry.percentage, Math.min(100, value.percentage));
      increment = percentage - entry.percentage;
      entry.percentage = percentage;
    }
    const message = value.kind === "begin" ? [value.title, value.message].filter(Boolean).join(": ") : value.message;
    entry.sink.report(message || undefined, increment);
    return true;
  }
}
