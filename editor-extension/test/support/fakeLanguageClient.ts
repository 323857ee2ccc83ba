/**
 * Stand-in for `vscode-languageclient/node` in the vscode-mocked unit tests: the real
 * LanguageClient needs a running VS Code. This one keeps the parts the extension relies
 * on (options, state events, restart, sendRequest/onNotification) and talks to a
 * {@link FakeLoviaServer} over a real vscode-jsonrpc connection.
 */
import type { MessageConnection } from "vscode-jsonrpc/node";
import type { FakeLoviaServer } from "./fakeServer";

export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}
export enum CloseAction {
  DoNotRestart = 1,
  Restart = 2,
}
export enum ErrorAction {
  Continue = 1,
  Shutdown = 2,
}

type Listener = (e: { oldState: State; newState: State }) => void;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyOptions = any;

export class LanguageClient {
  static instances: LanguageClient[] = [];
  /** The fake server new clients connect to. */
  static server: FakeLoviaServer | undefined;

  state = State.Stopped;
  connection: MessageConnection | undefined;
  initializeParams: unknown;
  startCount = 0;
  readonly sentNotifications: { method: string; params: unknown }[] = [];
  private readonly listeners = new Set<Listener>();
  private readonly notificationHandlers: { method: string; handler: (p: unknown) => void }[] = [];
  /** Handlers of server -> client requests (`lovia/editor/*`), by method. */
  readonly requestHandlers = new Map<string, (p: never) => unknown>();

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: AnyOptions,
    readonly clientOptions: AnyOptions,
  ) {
    LanguageClient.instances.push(this);
  }

  onDidChangeState(listener: Listener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private setState(newState: State): void {
    const oldState = this.state;
    this.state = newState;
    for (const l of [...this.listeners]) l({ oldState, newState });
  }

  async start(): Promise<void> {
    if (!LanguageClient.server) throw new Error("no fake server");
    this.setState(State.Starting);
    this.startCount += 1;
    const opts = this.clientOptions.initializationOptions;
    const initializationOptions = typeof opts === "function" ? opts() : opts;
    this.connection = LanguageClient.server.attach();
    for (const h of this.notificationHandlers) this.connection.onNotification(h.method, h.handler);
    for (const [method, handler] of this.requestHandlers) this.connection.onRequest(method, (p: unknown) => handler(p as never));
    this.initializeParams = { initializationOptions };
    await this.connection.sendRequest("initialize", this.initializeParams);
    this.setState(State.Running);
  }

  async stop(): Promise<void> {
    this.connection?.dispose();
    this.connection = undefined;
    this.setState(State.Stopped);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** What the real client does when the server process dies. */
  async simulateCrash(): Promise<unknown> {
    LanguageClient.server?.detachAll();
    this.connection = undefined;
    const result = await this.clientOptions.errorHandler.closed();
    if (result.action === CloseAction.Restart) await this.start();
    else this.setState(State.Stopped);
    return result;
  }

  /** Ask for configuration the way the server's workspace/configuration request would. */
  async requestConfiguration(items: { section?: string }[], read: (section: string) => unknown): Promise<unknown[]> {
    const next = (params: { items: { section?: string }[] }) => params.items.map((i) => (i.section ? read(i.section) : null));
    const mw = this.clientOptions.middleware?.workspace?.configuration;
    return mw ? mw({ items }, {}, next) : next({ items });
  }

  sendRequest(method: string, params: unknown): Promise<unknown> {
    if (!this.connection) return Promise.reject(new Error("Client is not running"));
    return this.connection.sendRequest(method, params);
  }

  sendNotification(method: string, params: unknown): Promise<void> {
    this.sentNotifications.push({ method, params });
    return Promise.resolve();
  }

  onRequest<P>(method: string, handler: (p: P) => unknown): { dispose(): void } {
    this.requestHandlers.set(method, handler as (p: never) => unknown);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  onNotification(method: string, handler: (p: unknown) => void): { dispose(): void } {
    const entry = { method, handler };
    this.notificationHandlers.push(entry);
    const sub = this.connection?.onNotification(method, handler);
    return {
      dispose: () => {
        sub?.dispose();
        const i = this.notificationHandlers.indexOf(entry);
        if (i >= 0) this.notificationHandlers.splice(i, 1);
      },
    };
  }
}
