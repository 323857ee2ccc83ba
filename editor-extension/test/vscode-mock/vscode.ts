/**
 * A hand-written stand-in for the `vscode` module (VS Code cannot run here). It keeps
 * enough real behaviour (settings, commands, tabs, secrets, events) for the extension's
 * wiring to be exercised, and records what the extension asked of the UI.
 * Tests reach the recorded state through `__mock`.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */

export const version = "1.99.0";

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export type Event<T> = (listener: (e: T) => unknown, thisArg?: unknown, disposables?: Disposable[]) => Disposable;

export class EventEmitter<T> {
  private listeners = new Set<(e: T) => unknown>();
  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query: string,
    readonly fragment: string,
  ) {}
  static parse(value: string, _strict?: boolean): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!m) throw new Error(`bad uri ${value}`);
    return new Uri(m[1]!, m[2] ?? "", decodeURIComponent(m[3] ?? ""), m[4] ?? "", m[5] ?? "");
  }
  static file(path: string): Uri {
    return new Uri("file", "", path, "", "");
  }
  static from(c: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(c.scheme, c.authority ?? "", c.path ?? "", c.query ?? "", c.fragment ?? "");
  }
  static joinPath(base: Uri, ...segments: string[]): Uri {
    const path = [base.path.replace(/\/$/, ""), ...segments].join("/");
    return new Uri(base.scheme, base.authority, path, base.query, base.fragment);
  }
  get fsPath(): string {
    return this.path;
  }
  with(change: { scheme?: string; path?: string; query?: string }): Uri {
    return new Uri(change.scheme ?? this.scheme, this.authority, change.path ?? this.path, change.query ?? this.query, this.fragment);
  }
  toString(): string {
    const auth = this.authority || this.scheme === "file" ? `//${this.authority}` : "";
    return `${this.scheme}:${auth}${this.path}${this.query ? `?${this.query}` : ""}${this.fragment ? `#${this.fragment}` : ""}`;
  }
  toJSON(): string {
    return this.toString();
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    if (typeof a === "number") {
      this.start = new Position(a, b as number);
      this.end = new Position(c!, d!);
    } else {
      this.start = a;
      this.end = b as Position;
    }
  }
}

export class Selection extends Range {}

export class CodeLens {
  constructor(
    readonly range: Range,
    readonly command?: { title: string; command: string; arguments?: unknown[] },
  ) {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(readonly id: string) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  iconPath?: unknown;
  contextValue?: string;
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export class TabInputTextDiff {
  constructor(
    readonly original: Uri,
    readonly modified: Uri,
  ) {}
}

export class TabInputText {
  constructor(readonly uri: Uri) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}

// ---------------------------------------------------------------------------
// Recorded state

interface Tab {
  label: string;
  input: unknown;
  group: TabGroup;
}
interface TabGroup {
  tabs: Tab[];
  activeTab: Tab | undefined;
  isActive: boolean;
}

interface Message {
  level: "info" | "warning" | "error";
  text: string;
  options: unknown;
  items: string[];
}

const group: TabGroup = { tabs: [], activeTab: undefined, isActive: true };
const tabsChanged = new EventEmitter<{ opened: Tab[]; closed: Tab[]; changed: Tab[] }>();

/** An open text document of the mock (`__mock.openDocument`). */
export interface MockDocument {
  uri: Uri;
  text: string;
  isDirty: boolean;
  getText(): string;
  save(): Promise<boolean>;
}

function freshState() {
  return {
    /** User settings (`globalValue`), by full key. */
    settings: {} as Record<string, unknown>,
    /** Workspace settings (`.vscode/settings.json`, `workspaceValue`), by full key; they win over user settings. */
    workspaceSettings: {} as Record<string, unknown>,
    commands: new Map<string, (...args: any[]) => unknown>(),
    executed: [] as { command: string; args: unknown[] }[],
    context: new Map<string, unknown>(),
    messages: [] as Message[],
    /** Answers for the next show*Message calls (label or undefined), FIFO. */
    messageAnswers: [] as (string | undefined)[],
    quickPickAnswers: [] as ((items: any[]) => any)[],
    /** Quick picks created with createQuickPick and shown. */
    quickPicks: [] as any[],
    inputBoxAnswers: [] as (string | undefined)[],
    shownDocuments: [] as { uri: string; options: unknown }[],
    contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): string }>(),
    fileSystems: new Map<string, { readFile(uri: Uri): Uint8Array; writeFile(uri: Uri, content: Uint8Array, options: unknown): void }>(),
    codeLensProviders: [] as { selector: unknown; provider: any }[],
    webviewProviders: new Map<string, any>(),
    statusBarItems: [] as any[],
    outputLines: [] as { level: string; text: string }[],
    secrets: new Map<string, string>(),
    extensions: new Map<string, any>(),
    trusted: true,
    textDocuments: [] as MockDocument[],
    /** File contents `workspace.fs.readFile` answers with, by URI string. */
    files: new Map<string, string>(),
    workspaceFolders: [{ uri: Uri.file("/work/project"), name: "project", index: 0 }] as
      | { uri: Uri; name: string; index: number }[]
      | undefined,
    activeTextEditor: undefined as any,
    openedDocuments: [] as { language?: string; content?: string }[],
    treeProviders: new Map<string, any>(),
  };
}

export const __mock = {
  state: freshState(),
  trustEmitter: new EventEmitter<void>(),
  configEmitter: new EventEmitter<{ affectsConfiguration(s: string): boolean }>(),
  group,
  reset(): void {
    this.state = freshState();
    this.trustEmitter = new EventEmitter<void>();
    this.configEmitter = new EventEmitter();
    group.tabs = [];
    group.activeTab = undefined;
  },
  openTab(label: string, input: unknown): Tab {
    const tab: Tab = { label, input, group };
    group.tabs.push(tab);
    group.activeTab = tab;
    tabsChanged.fire({ opened: [tab], closed: [], changed: [] });
    return tab;
  },
  openDocument(path: string, text: string, isDirty = false): MockDocument {
    const doc: MockDocument = {
      uri: Uri.file(path),
      text,
      isDirty,
      getText: () => doc.text,
      save: () => {
        doc.isDirty = false;
        return Promise.resolve(true);
      },
    };
    this.state.textDocuments.push(doc);
    return doc;
  },
  diffTabs(): TabInputTextDiff[] {
    return group.tabs.map((t) => t.input).filter((i): i is TabInputTextDiff => i instanceof TabInputTextDiff);
  },
  /** Run a registered command as VS Code would. */
  run(command: string, ...args: unknown[]): unknown {
    const fn = this.state.commands.get(command);
    if (!fn) throw new Error(`command not registered: ${command}`);
    return fn(...args);
  },
};

// ---------------------------------------------------------------------------
// Namespaces

function lookupIn(s: Record<string, unknown>, path: string): unknown {
  if (path in s) return s[path];
  // Build the nested object for a section prefix (as getConfiguration("lovia").get("permissions")).
  const prefix = `${path}.`;
  const keys = Object.keys(s).filter((k) => k.startsWith(prefix));
  if (keys.length === 0) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const parts = k.slice(prefix.length).split(".");
    let node = out;
    parts.slice(0, -1).forEach((p) => {
      node[p] = (node[p] as Record<string, unknown>) ?? {};
      node = node[p] as Record<string, unknown>;
    });
    node[parts[parts.length - 1]!] = s[k];
  }
  return out;
}

function merged(a: unknown, b: unknown): unknown {
  if (typeof a !== "object" || a === null || Array.isArray(a) || typeof b !== "object" || b === null || Array.isArray(b)) return b === undefined ? a : b;
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
  for (const [k, v] of Object.entries(b)) out[k] = merged(out[k], v);
  return out;
}

/** The effective value: workspace settings over user settings. */
function lookup(path: string): unknown {
  return merged(lookupIn(__mock.state.settings, path), lookupIn(__mock.state.workspaceSettings, path));
}

export const workspace = {
  get isTrusted(): boolean {
    return __mock.state.trusted;
  },
  get workspaceFolders() {
    return __mock.state.workspaceFolders;
  },
  getConfiguration(section?: string, _scope?: unknown) {
    const full = (key: string) => (section ? `${section}.${key}` : key);
    return {
      get<T>(key: string, defaultValue?: T): T | undefined {
        const v = lookup(full(key));
        return v === undefined ? defaultValue : (v as T);
      },
      has(key: string): boolean {
        return lookup(full(key)) !== undefined;
      },
      update(key: string, value: unknown): Promise<void> {
        __mock.state.settings[full(key)] = value;
        return Promise.resolve();
      },
      inspect(key: string) {
        return {
          key: full(key),
          defaultValue: undefined,
          globalValue: lookupIn(__mock.state.settings, full(key)),
          workspaceValue: lookupIn(__mock.state.workspaceSettings, full(key)),
          workspaceFolderValue: undefined,
        };
      },
      toJSON(): unknown {
        return section ? lookup(section) ?? {} : {};
      },
    };
  },
  onDidGrantWorkspaceTrust: ((listener: () => void) => __mock.trustEmitter.event(listener)) as Event<void>,
  onDidChangeConfiguration: ((listener: (e: any) => void) => __mock.configEmitter.event(listener)) as Event<any>,
  onDidChangeTextDocument: new EventEmitter<any>().event,
  registerTextDocumentContentProvider(scheme: string, provider: { provideTextDocumentContent(uri: Uri): string }): Disposable {
    __mock.state.contentProviders.set(scheme, provider);
    return new Disposable(() => __mock.state.contentProviders.delete(scheme));
  },
  registerFileSystemProvider(scheme: string, provider: { readFile(uri: Uri): Uint8Array; writeFile(uri: Uri, content: Uint8Array, options: unknown): void }): Disposable {
    __mock.state.fileSystems.set(scheme, provider);
    return new Disposable(() => __mock.state.fileSystems.delete(scheme));
  },
  applyEdit: (): Promise<boolean> => Promise.resolve(true),
  get textDocuments(): MockDocument[] {
    return __mock.state.textDocuments;
  },
  fs: {
    readFile(uri: Uri): Promise<Uint8Array> {
      const text = __mock.state.files.get(uri.toString());
      if (text === undefined) return Promise.reject(new Error(`no file ${uri.toString()}`));
      return Promise.resolve(new TextEncoder().encode(text));
    },
  },
  asRelativePath(path: string | Uri): string {
    return typeof path === "string" ? path : path.fsPath;
  },
  openTextDocument(arg: { language?: string; content?: string }): Promise<unknown> {
    __mock.state.openedDocuments.push(arg);
    return Promise.resolve({ uri: Uri.parse("untitled:Untitled-1"), getText: () => arg.content ?? "" });
  },
};

function showMessage(level: Message["level"]) {
  return (text: string, ...rest: unknown[]): Promise<string | undefined> => {
    let options: unknown;
    if (rest.length > 0 && typeof rest[0] === "object" && rest[0] !== null) options = rest.shift();
    const items = rest as string[];
    __mock.state.messages.push({ level, text, options, items });
    return Promise.resolve(__mock.state.messageAnswers.shift());
  };
}

function logChannel(name: string) {
  const push = (level: string) => (text: string) => {
    __mock.state.outputLines.push({ level, text });
  };
  return {
    name,
    logLevel: 2,
    onDidChangeLogLevel: new EventEmitter<number>().event,
    trace: push("trace"),
    debug: push("debug"),
    info: push("info"),
    warn: push("warn"),
    error: (e: string | Error) => push("error")(e instanceof Error ? e.message : e),
    append: push("append"),
    appendLine: push("info"),
    replace: push("replace"),
    clear: () => undefined,
    show: () => {
      __mock.state.executed.push({ command: "__showLog", args: [name] });
    },
    hide: () => undefined,
    dispose: () => undefined,
  };
}

export const window = {
  createOutputChannel: (name: string, _opts?: unknown) => logChannel(name),
  showInformationMessage: showMessage("info"),
  showWarningMessage: showMessage("warning"),
  showErrorMessage: showMessage("error"),
  createQuickPick<T>() {
    const accepted = new EventEmitter<void>();
    const hidden = new EventEmitter<void>();
    const pick = {
      title: undefined as string | undefined,
      placeholder: undefined as string | undefined,
      ignoreFocusOut: false,
      items: [] as T[],
      selectedItems: [] as T[],
      visible: false,
      onDidAccept: accepted.event,
      onDidHide: hidden.event,
      show() {
        pick.visible = true;
        __mock.state.quickPicks.push(pick);
      },
      hide() {
        if (!pick.visible) return;
        pick.visible = false;
        hidden.fire();
      },
      /** Test helper: the user picks the item with this label. */
      accept(label: string) {
        pick.selectedItems = pick.items.filter((i) => (i as { label: string }).label === label);
        accepted.fire();
      },
      dispose() {
        accepted.dispose();
        hidden.dispose();
      },
    };
    return pick;
  },
  showQuickPick(items: any[], _options?: unknown): Promise<any> {
    const answer = __mock.state.quickPickAnswers.shift();
    return Promise.resolve(answer ? answer(items) : undefined);
  },
  showInputBox(_options?: unknown): Promise<string | undefined> {
    return Promise.resolve(__mock.state.inputBoxAnswers.shift());
  },
  showTextDocument(doc: Uri | { uri: Uri }, options?: unknown): Promise<unknown> {
    const uri = doc instanceof Uri ? doc : doc.uri;
    __mock.state.shownDocuments.push({ uri: uri.toString(), options });
    return Promise.resolve({});
  },
  get activeTextEditor() {
    return __mock.state.activeTextEditor;
  },
  createStatusBarItem(id: string, alignment?: StatusBarAlignment, priority?: number) {
    const item = {
      id,
      alignment,
      priority,
      name: "",
      text: "",
      tooltip: "" as unknown,
      command: undefined as unknown,
      backgroundColor: undefined as unknown,
      visible: false,
      show() {
        this.visible = true;
      },
      hide() {
        this.visible = false;
      },
      dispose() {
        this.visible = false;
      },
    };
    __mock.state.statusBarItems.push(item);
    return item;
  },
  registerTreeDataProvider(id: string, provider: unknown): Disposable {
    __mock.state.treeProviders.set(id, provider);
    return new Disposable(() => __mock.state.treeProviders.delete(id));
  },
  createTreeView(id: string, options: { treeDataProvider: unknown }) {
    __mock.state.treeProviders.set(id, options.treeDataProvider);
    return {
      selection: [] as unknown[],
      visible: true,
      reveal: () => Promise.resolve(),
      dispose: () => __mock.state.treeProviders.delete(id),
    };
  },
  registerWebviewViewProvider(id: string, provider: unknown, _options?: unknown): Disposable {
    __mock.state.webviewProviders.set(id, provider);
    return new Disposable(() => __mock.state.webviewProviders.delete(id));
  },
  withProgress: (_o: unknown, task: (p: unknown, t: unknown) => Promise<unknown>) =>
    task({ report: () => undefined }, { isCancellationRequested: false, onCancellationRequested: () => new Disposable() }),
  tabGroups: {
    get all() {
      return [group];
    },
    get activeTabGroup() {
      return group;
    },
    close(tabs: Tab | Tab[], _preserveFocus?: boolean): Promise<boolean> {
      const list = Array.isArray(tabs) ? tabs : [tabs];
      group.tabs = group.tabs.filter((t) => !list.includes(t));
      if (group.activeTab && list.includes(group.activeTab)) group.activeTab = group.tabs[group.tabs.length - 1];
      tabsChanged.fire({ opened: [], closed: list, changed: [] });
      return Promise.resolve(true);
    },
    onDidChangeTabs: tabsChanged.event,
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: any[]) => unknown): Disposable {
    if (__mock.state.commands.has(id)) throw new Error(`command already registered: ${id}`);
    __mock.state.commands.set(id, fn);
    return new Disposable(() => __mock.state.commands.delete(id));
  },
  executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    __mock.state.executed.push({ command, args });
    if (command === "setContext") {
      __mock.state.context.set(args[0] as string, args[1]);
      return Promise.resolve(undefined);
    }
    if (command === "vscode.diff") {
      const [left, right, title] = args as [Uri, Uri, string];
      __mock.openTab(title, new TabInputTextDiff(left, right));
      return Promise.resolve(undefined);
    }
    const fn = __mock.state.commands.get(command);
    return Promise.resolve(fn ? fn(...args) : undefined);
  },
};

const diagnosticsChanged = new EventEmitter<{ uris: Uri[] }>();

export const languages = {
  /** No language server runs in the mock: the Problems list is empty. */
  getDiagnostics(_uri?: Uri): unknown[] {
    return [];
  },
  onDidChangeDiagnostics: diagnosticsChanged.event,
  registerCodeLensProvider(selector: unknown, provider: unknown): Disposable {
    const entry = { selector, provider };
    __mock.state.codeLensProviders.push(entry);
    return new Disposable(() => {
      __mock.state.codeLensProviders = __mock.state.codeLensProviders.filter((e) => e !== entry);
    });
  },
};

export const extensions = {
  getExtension(id: string) {
    return __mock.state.extensions.get(id);
  },
};

export const env = { appName: "Visual Studio Code (mock)", language: "en" };

export enum FileType {
  Unknown = 0,
  File = 1,
  Directory = 2,
}
export enum FileChangeType {
  Changed = 1,
  Created = 2,
  Deleted = 3,
}
export class FileSystemError extends Error {
  static FileNotFound(uri?: unknown): FileSystemError {
    return new FileSystemError(`not found: ${String(uri)}`);
  }
  static NoPermissions(uri?: unknown): FileSystemError {
    return new FileSystemError(`no permissions: ${String(uri)}`);
  }
}
export class WorkspaceEdit {
  readonly edits: { uri: unknown; range: unknown; text: string }[] = [];
  replace(uri: unknown, range: unknown, text: string): void {
    this.edits.push({ uri, range, text });
  }
}
