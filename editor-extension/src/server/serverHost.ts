import * as cp from "node:child_process";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { LoviaClient, type RpcEndpoint } from "../protocol/client";
import type { ServerState } from "../chat/messages";
import { applyAgentEdit } from "./agentEdits";
import { EDITOR_DIAGNOSTICS, EDITOR_LOCATIONS, EDITOR_SYMBOLS, EditorIntel, type IntelEditor, type TsDiagnostic } from "./editorIntel";
import { ServerBootstrap, type InterpreterChoice } from "./bootstrap";
import { API_KEY_PROVIDERS, BASE_URL_KEY, buildInitializationOptions, restrictedSettings, serverEnv, serverSettings, type InspectedSection } from "./settings";

/** Restarts allowed within {@link CRASH_WINDOW_MS} before the server is left stopped. */
export const MAX_RESTARTS = 4;
export const CRASH_WINDOW_MS = 3 * 60 * 1000;

export type StateListener = (state: ServerState, detail?: string) => void;

/** stderr of a server that died before it answered: a restart will not fix these. */
const FATAL_STARTUP = /\b(ModuleNotFoundError|ImportError|SyntaxError)\b|No module named/;

function isTrusted(): boolean {
  return vscode.workspace.isTrusted;
}

/**
 * The `lovia` section for the server. Trusted: the merged value VS Code gives. Untrusted: the
 * user's values and the workspace's told apart (`inspect`), so that the repository's can only
 * add restrictions.
 */
function loviaSection(merged: unknown, scopeUri: string | undefined): unknown {
  if (isTrusted()) return serverSettings(merged, true);
  const scope = scopeUri ? vscode.Uri.parse(scopeUri) : undefined;
  const inspected = vscode.workspace.getConfiguration(undefined, scope).inspect<unknown>("lovia") as InspectedSection | undefined;
  return restrictedSettings(inspected);
}

/** Route a server stream (Python logging on stderr) to the log channel at a fitting level. */
export function pipeLines(input: NodeJS.ReadableStream, log: vscode.LogOutputChannel): void {
  let buffer = "";
  input.on("data", (chunk: Buffer | string) => {
    buffer += chunk.toString();
    let nl = buffer.indexOf("\n");
    while (nl >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
      if (line) {
        if (/\b(ERROR|CRITICAL)\b|Traceback/.test(line)) log.error(line);
        else if (/\bWARN(ING)?\b/.test(line)) log.warn(line);
        else log.info(line);
      }
      nl = buffer.indexOf("\n");
    }
  });
}

/** {@link IntelEditor} over the real VS Code API; `log` hears why TypeScript did not answer. */
export function vscodeIntelEditor(log?: vscode.LogOutputChannel): IntelEditor {
  const canonical = (uri: string) => vscode.Uri.parse(uri).toString();
  return {
    diagnostics: (uri) => vscode.languages.getDiagnostics(vscode.Uri.parse(uri)),
    allDiagnostics: () => vscode.languages.getDiagnostics(),
    onDidChangeDiagnostics: (listener) => vscode.languages.onDidChangeDiagnostics((e) => listener(e.uris)),
    onDidChangeText: (listener) =>
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0) listener(e.document.uri);
      }),
    execute: (command, uri, ...rest) => {
      const args = rest.map((a) => (isPosition(a) ? new vscode.Position(a.line, a.character) : a));
      return vscode.commands.executeCommand(command, ...(uri === undefined ? [] : [vscode.Uri.parse(uri)]), ...args);
    },
    isOpen: (uri) => {
      const key = canonical(uri);
      return vscode.workspace.textDocuments.some((d) => d.uri.toString() === key);
    },
    open: (uri) => vscode.workspace.openTextDocument(vscode.Uri.parse(uri)),
    hasTab: (uri) => {
      const key = canonical(uri);
      return vscode.window.tabGroups.all.some((g) =>
        g.tabs.some((t) => {
          const input = t.input as { uri?: vscode.Uri; modified?: vscode.Uri } | undefined;
          return input?.uri?.toString() === key || input?.modified?.toString() === key;
        }),
      );
    },
    show: async (uri) => {
      log?.info(`showing ${uri} in a preview tab, so that its language server checks it`);
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
      return vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
    },
    canonical,
    typescript: {
      check: async (part, uri) => {
        try {
          // Started by a TS/JS document being open; activating is a no-op once it runs.
          await vscode.extensions.getExtension(TYPESCRIPT_EXTENSION)?.activate();
          const answer = await vscode.commands.executeCommand<{ type?: string; body?: unknown } | undefined>("typescript.tsserverRequest", part, { file: vscode.Uri.parse(uri) });
          if (answer?.type !== "response" || !Array.isArray(answer.body)) throw new Error(`answered ${JSON.stringify(answer)?.slice(0, 200) ?? "nothing"}`);
          return answer.body as TsDiagnostic[];
        } catch (err) {
          log?.warn(`TypeScript refused ${part} for ${uri} (asked once more, then the Problems list answers): ${err instanceof Error ? err.message : String(err)}`);
          throw err;
        }
      },
      styleChecksAsWarnings: () => vscode.workspace.getConfiguration("typescript").get<boolean>("reportStyleChecksAsWarnings", true),
    },
  };
}

/** VS Code's built-in TypeScript and JavaScript language features. */
const TYPESCRIPT_EXTENSION = "vscode.typescript-language-features";

function isPosition(v: unknown): v is { line: number; character: number } {
  return typeof v === "object" && v !== null && typeof (v as { line?: unknown }).line === "number" && typeof (v as { character?: unknown }).character === "number";
}

/**
 * Owns the `LanguageClient` running `python -m lovia_server` over stdio: builds its
 * options, restarts it after a crash with a visible notice, and exposes the typed
 * protocol client.
 */
export class ServerHost implements vscode.Disposable {
  readonly client: LanguageClient;
  readonly lovia: LoviaClient;
  private crashes: number[] = [];
  private readonly listeners = new Set<StateListener>();
  private readonly disposables: vscode.Disposable[] = [];
  private everRan = false;
  private stateValue: ServerState = "stopped";
  private interpreter: InterpreterChoice | undefined;
  /** The current server process reached the running state. */
  private answered = false;
  private stderrTail: string[] = [];
  readonly bootstrap: ServerBootstrap;
  /** Routes the commands the server's code actions run (set once the panel exists). */
  commandRouter: ((command: string, args: unknown[], next: (command: string, args: unknown[]) => Promise<unknown>) => Promise<unknown>) | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    bootstrap?: ServerBootstrap,
  ) {
    this.bootstrap = bootstrap ?? new ServerBootstrap(context, log);
    const serverOptions: ServerOptions = () => this.spawnServer();
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: log,
      stdioOptions: { stdout: pipeLines, stderr: pipeLines },
      initializationOptions: () =>
        buildInitializationOptions({ stateDir: context.storageUri?.fsPath, trusted: isTrusted() }),
      synchronize: { configurationSection: "lovia" },
      errorHandler: {
        error: (_error, _message, count) => ({
          action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => this.onClosed(),
      },
      middleware: {
        // The code actions' commands (lovia.action.*) open their run in the panel.
        executeCommand: (command, args, next) =>
          this.commandRouter
            ? this.commandRouter(command, args, (c, a) => Promise.resolve(next(c, a)))
            : next(command, args),
        workspace: {
          // The client calls `next` without a token; lovia's edits are saved when clean before.
          handleApplyEdit: (params, next) =>
            applyAgentEdit(params, () => Promise.resolve(next(params, undefined as never)), (uri) =>
              vscode.workspace.textDocuments.find((d) => d.uri.toString() === vscode.Uri.parse(uri).toString()),
            ),
          // A change is announced without values (`settings: null`): the server then asks with
          // workspace/configuration, answered below. The client's default would push the raw
          // merged section, the workspace's values included, past the Workspace Trust mapping.
          didChangeConfiguration: (_sections, next) => next(undefined),
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return result.map((value, i) =>
              params.items[i]?.section === "lovia" ? loviaSection(value, params.items[i]?.scopeUri) : value,
            );
          },
        },
      },
    };
    this.client = new LanguageClient("lovia", "lovia", serverOptions, clientOptions);
    this.lovia = new LoviaClient(this.client as unknown as RpcEndpoint);
    const intel = new EditorIntel(vscodeIntelEditor(this.log));
    this.disposables.push(
      intel,
      this.client.onRequest(EDITOR_DIAGNOSTICS, (params: Parameters<EditorIntel["diagnostics"]>[0]) => intel.diagnostics(params)),
      this.client.onRequest(EDITOR_LOCATIONS, (params: Parameters<EditorIntel["locations"]>[0]) => intel.locations(params)),
      this.client.onRequest(EDITOR_SYMBOLS, (params: Parameters<EditorIntel["symbols"]>[0]) => intel.symbols(params)),
    );
    this.disposables.push(
      this.client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          this.answered = true;
          const wasRestart = this.everRan;
          this.everRan = true;
          this.setState("running", wasRestart ? "restarted" : undefined);
        } else if (e.newState === State.Starting) {
          this.setState(this.everRan ? "restarting" : "starting");
        } else if (e.newState === State.Stopped && this.stateValue !== "restarting") {
          this.setState("stopped");
        }
      }),
      // The server was told it is untrusted when it started: a restart tells it otherwise.
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.onTrustGranted()),
    );
  }

  get state(): ServerState {
    return this.stateValue;
  }

  onDidChangeState(listener: StateListener): vscode.Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  async start(): Promise<void> {
    this.setState(this.everRan ? "restarting" : "starting");
    if (!this.interpreter) {
      this.interpreter = await this.bootstrap.resolve();
      if (!this.interpreter) {
        this.setState("stopped", "no Python with lovia");
        return;
      }
    }
    try {
      await this.client.start();
    } catch (err) {
      if (this.reportFatalStartup()) return;
      const message = err instanceof Error ? err.message : String(err);
      this.log.error(`lovia server failed to start: ${message}`);
      this.setState("stopped", message);
      const choice = await vscode.window.showErrorMessage(
        `lovia: the server did not start (${message}). Is lovia installed for the configured Python?`,
        "Set Python Path",
        "Open Log",
      );
      if (choice === "Open Log") this.log.show();
      else if (choice === "Set Python Path") {
        await vscode.commands.executeCommand("workbench.action.openSettings", "lovia.pythonPath");
      }
    }
  }

  /** Install (or reinstall) lovia into the private environment, then (re)start on it. */
  async install(): Promise<void> {
    const choice = await this.bootstrap.installOnRequest();
    if (!choice) return;
    this.interpreter = choice;
    await this.restart();
  }

  async restart(): Promise<void> {
    this.crashes = [];
    if (this.interpreter?.source !== "private") this.interpreter = undefined;
    if (this.client.state === State.Stopped) {
      await this.start();
      return;
    }
    this.setState("restarting");
    await this.client.restart();
  }

  async stop(): Promise<void> {
    if (this.client.state !== State.Stopped) await this.client.stop();
  }

  private async onTrustGranted(): Promise<void> {
    if (this.client.state === State.Stopped) return;
    this.log.info("lovia: workspace trusted; restarting the server with your full settings");
    await this.restart();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.listeners.clear();
    this.lovia.dispose();
  }

  // -------------------------------------------------------------------------

  /**
   * When the server died before it answered with an error a restart won't fix (an import
   * error, a broken install), tell the user once, with the fix, and stay stopped.
   */
  private reportFatalStartup(): boolean {
    if (this.answered) return false;
    const fatal = [...this.stderrTail].reverse().find((l) => FATAL_STARTUP.test(l));
    if (!fatal) return false;
    if (this.stateValue === "stopped" && this.interpreter === undefined) return true; // already told
    this.setState("stopped", "cannot start");
    const source = this.interpreter?.command ?? "the configured Python";
    this.interpreter = undefined;
    this.log.error(`lovia server cannot start with ${source}: ${fatal.trim()}`);
    void vscode.window
      .showErrorMessage(`lovia: the server cannot start with ${source}: ${fatal.trim()}`, "Install lovia", "Open Settings", "Open Log")
      .then((choice) => {
        if (choice === "Install lovia") void this.install();
        else if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "lovia.pythonPath");
        else if (choice === "Open Log") this.log.show();
      });
    return true;
  }

  private setState(state: ServerState, detail?: string): void {
    this.stateValue = state;
    for (const l of [...this.listeners]) l(state, detail);
  }

  private async readKeys(): Promise<Record<string, string | undefined>> {
    const keys: Record<string, string | undefined> = {};
    for (const p of API_KEY_PROVIDERS) keys[p.id] = await this.context.secrets.get(p.secretKey);
    return keys;
  }

  private async spawnServer(): Promise<cp.ChildProcess> {
    const python = this.interpreter ?? (await this.bootstrap.resolve());
    if (!python) throw new Error("no Python with the lovia server");
    this.interpreter = python;
    const env = serverEnv(process.env, await this.readKeys(), this.context.globalState.get<string>(BASE_URL_KEY));
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    this.log.info(`starting ${python.command} -m lovia_server (interpreter from ${python.source})`);
    const child = cp.spawn(python.command, ["-m", "lovia_server"], { cwd, env, stdio: "pipe" });
    this.answered = false;
    this.stderrTail = [];
    child.stderr?.on("data", (chunk: Buffer | string) => {
      this.stderrTail.push(...chunk.toString().split(/\r?\n/).filter((l) => l.trim()));
      if (this.stderrTail.length > 40) this.stderrTail.splice(0, this.stderrTail.length - 40);
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (err) => reject(new Error(`cannot run ${python.command}: ${err.message}`)));
    });
    child.once("exit", (code, signal) => this.log.info(`lovia server exited (code ${code}, signal ${signal})`));
    return child;
  }

  private onClosed(): { action: CloseAction; handled: boolean } {
    if (this.reportFatalStartup()) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < CRASH_WINDOW_MS);
    this.crashes.push(now);
    if (this.crashes.length <= MAX_RESTARTS) {
      this.setState("restarting", `restart ${this.crashes.length} of ${MAX_RESTARTS}`);
      void vscode.window
        .showWarningMessage(
          `lovia: the server stopped unexpectedly and is restarting (${this.crashes.length}/${MAX_RESTARTS}).`,
          "Open Log",
        )
        .then((choice) => {
          if (choice === "Open Log") this.log.show();
        });
      return { action: CloseAction.Restart, handled: true };
    }
    this.setState("stopped", "crashed repeatedly");
    void vscode.window
      .showErrorMessage(
        `lovia: the server crashed ${this.crashes.length} times in 3 minutes and was not restarted.`,
        "Restart",
        "Open Log",
      )
      .then((choice) => {
        if (choice === "Restart") void this.restart();
        else if (choice === "Open Log") this.log.show();
      });
    return { action: CloseAction.DoNotRestart, handled: true };
  }
}
