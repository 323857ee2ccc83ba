import * as crypto from "node:crypto";
import * as vscode from "vscode";
import type { ChatController } from "./controller";
import { makeNonce, renderWebviewHtml } from "./html";
import {
  checkWebviewIntent,
  isWebviewIntent,
  type ChatViewState,
  type CommandItem,
  type CommandsMessage,
  type Mention,
  type MentionsMessage,
} from "./messages";
import { ViewSync } from "./viewSync";

export const CHAT_VIEW_ID = "lovia.chat";

/** Minimum spacing of state posts while events stream (ms). */
const POST_INTERVAL_MS = 30;

/**
 * The side panel. The extension keeps the state; the webview gets it once after it loads and
 * then only what changed (see {@link ViewSync}), and posts user intents back.
 */
export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private viewDisposables: vscode.Disposable[] = [];
  private pending: ChatViewState | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastPost = 0;
  private readonly sync = new ViewSync();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: ChatController,
    private readonly log: vscode.LogOutputChannel,
    private readonly mentions: (query: string) => Promise<Mention[]> = () => Promise.resolve([]),
    private readonly commands: () => Promise<CommandItem[]> = () => Promise.resolve([]),
  ) {
    this.disposables.push(this.controller.onDidChange((state) => this.schedule(state)));
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    for (const d of this.viewDisposables) d.dispose();
    this.view = view;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    const nonce = makeNonce((n) => crypto.randomBytes(n));
    view.webview.html = renderWebviewHtml({
      cspSource: view.webview.cspSource,
      nonce,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css")).toString(),
    });
    this.viewDisposables = [
      view.webview.onDidReceiveMessage((msg: unknown) => {
        // The webview is untrusted: nothing it posts is used before the generated validator passed it.
        if (!isWebviewIntent(msg)) {
          this.log.warn(`chat view: ignored malformed message (${checkWebviewIntent(msg)}): ${describe(msg)}`);
          return;
        }
        if (msg.type === "ready") {
          this.lastPost = 0;
          this.sync.reset();
        }
        if (msg.type === "mentionQuery") {
          void this.answerMentions(view, msg.query, msg.requestId);
          return;
        }
        if (msg.type === "commandQuery") {
          void this.answerCommands(view, msg.requestId);
          return;
        }
        void this.controller.handle(msg);
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
      view.onDidChangeVisibility(() => {
        // A hidden webview is discarded; when shown again it loads anew and says "ready".
        if (view.visible) this.flush(this.controller.state());
        else this.sync.reset();
      }),
    ];
  }

  /** Reveal the panel (e.g. after "run selection"). */
  reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of [...this.disposables, ...this.viewDisposables]) d.dispose();
  }

  private schedule(state: ChatViewState): void {
    this.pending = state;
    if (this.timer) return;
    const wait = Math.max(0, POST_INTERVAL_MS - (Date.now() - this.lastPost));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.pending) this.flush(this.pending);
    }, wait);
  }

  private async answerMentions(view: vscode.WebviewView, query: string, requestId: number): Promise<void> {
    let items: Mention[] = [];
    try {
      items = await this.mentions(query);
    } catch (err) {
      this.log.warn(`mention search failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    const message: MentionsMessage = { type: "mentions", requestId, items };
    void view.webview.postMessage(message);
  }

  /** The `/` menu's commands, from the server (`lovia/commands`), read afresh each time it opens. */
  private async answerCommands(view: vscode.WebviewView, requestId: number): Promise<void> {
    let items: CommandItem[] = [];
    try {
      items = await this.commands();
    } catch (err) {
      this.log.warn(`listing commands failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    const message: CommandsMessage = { type: "commands", requestId, items };
    void view.webview.postMessage(message);
  }

  /** A post that did not arrive: send everything again. */
  private resend(): void {
    this.sync.reset();
    this.schedule(this.controller.state());
  }

  private flush(state: ChatViewState): void {
    this.pending = undefined;
    if (!this.view || !this.view.visible) return;
    const message = this.sync.next(state);
    if (!message) return;
    this.lastPost = Date.now();
    void this.view.webview.postMessage(message).then(
      (delivered) => {
        if (!delivered) this.resend();
      },
      () => this.resend(),
    );
  }
}

/** A short rendering of a rejected message for the log (it may be anything, even unserialisable). */
function describe(value: unknown): string {
  try {
    return String(JSON.stringify(value)).slice(0, 200);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
