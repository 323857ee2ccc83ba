import * as crypto from "node:crypto";
import * as vscode from "vscode";
import type { ChatController } from "./controller";
import { makeNonce, renderWebviewHtml } from "./html";
import { isWebviewIntent, type ChatViewState, type ExtensionMessage } from "./messages";

export const CHAT_VIEW_ID = "lovia.chat";

/** Minimum spacing of state posts while events stream (ms). */
const POST_INTERVAL_MS = 30;

/**
 * The side panel. It renders the controller's state and posts user intents back;
 * the extension keeps the state, so a reloaded webview simply gets it again.
 */
export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private viewDisposables: vscode.Disposable[] = [];
  private pending: ChatViewState | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastPost = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: ChatController,
    private readonly log: vscode.LogOutputChannel,
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
        if (!isWebviewIntent(msg)) {
          this.log.warn(`chat view: ignored malformed message ${JSON.stringify(msg)?.slice(0, 200)}`);
          return;
        }
        if (msg.type === "ready") this.lastPost = 0;
        void this.controller.handle(msg);
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
      view.onDidChangeVisibility(() => {
        if (view.visible) this.flush(this.controller.state());
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

  private flush(state: ChatViewState): void {
    this.pending = undefined;
    if (!this.view) return;
    this.lastPost = Date.now();
    const message: ExtensionMessage = { type: "state", state };
    void this.view.webview.postMessage(message);
  }
}
