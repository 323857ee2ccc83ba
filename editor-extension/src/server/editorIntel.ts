/**
 * The editor's language intelligence for the lovia server: answers its `lovia/editor/*`
 * requests (declared with `initializationOptions.lovia.editorIntel`) from the language servers
 * VS Code runs — the Problems list (`languages.getDiagnostics`), TypeScript's own checker for
 * TS/JS files (`typescript.tsserverRequest`) and the `vscode.execute*Provider` commands. The
 * server decides what the agent may see (its ACL filters paths); this only answers.
 *
 * Kept free of the `vscode` module: {@link IntelEditor} is the slice of the API it uses, so the
 * version counting and the wait for a re-check are tested with plain objects.
 */
import type {
  EditorDiagnosticsParams,
  EditorDiagnosticsResult,
  EditorLocationsParams,
  EditorLocationsResult,
  EditorSymbolsParams,
  EditorSymbolsResult,
  FileDiagnosticsItem,
  LspDiagnostic,
  LspDocumentSymbol,
  LspLocation,
  LspSymbolInformation,
  Range as WireRange,
} from "../protocol/generated";

export const EDITOR_DIAGNOSTICS = "lovia/editor/diagnostics";
export const EDITOR_LOCATIONS = "lovia/editor/locations";
export const EDITOR_SYMBOLS = "lovia/editor/symbols";

/** The longest an `after` request waits for a re-check, whatever the server asks. */
export const MAX_WAIT_MS = 1500;
/** How long, showing it included, a file this showed gets to be checked once before its first
 * answer (the server waits 0.5 s for that answer; showing a tab can take longer on a busy
 * machine, and then the answer does not wait for it). */
export const FIRST_CHECK_MS = 150;
/** After a re-check, how long the file's problems must stay unchanged before the answer: a
 * language server publishes a check in parts (TypeScript: semantic, then suggestion problems),
 * and a late part must not be taken for the re-check of the agent's next edit. */
export const QUIET_MS = 400;
/** How long a request without `after` (the server's snapshot before an edit; it waits 0.5 s)
 * waits for TypeScript's checker before it answers from the Problems list instead. */
export const TS_SNAPSHOT_MS = 300;

/** The pause before a refused TypeScript check is asked once more. */
const TS_RETRY_MS = 50;
/** The files VS Code's TypeScript service checks (by extension: .ts .tsx .mts .cts .js ...). */
const TS_FILE = /\.[cm]?[jt]sx?$/i;
/** tsserver's style checks (unused names, implicit returns ...), which VS Code reports as
 * warnings while `typescript.reportStyleChecksAsWarnings` is on (its default). */
const TS_STYLE_CHECKS = new Set([6133, 6138, 6192, 6196, 7027, 7028, 7029, 7030]);
/** The three parts of a TypeScript check, as tsserver answers them on request. */
export const TS_CHECKS = ["syntacticDiagnosticsSync", "semanticDiagnosticsSync", "suggestionDiagnosticsSync"] as const;
export type TsCheck = (typeof TS_CHECKS)[number];

// The structural shapes of VS Code's objects that are read here (its classes satisfy them).
export interface VsPosition {
  readonly line: number;
  readonly character: number;
}
export interface VsRange {
  readonly start: VsPosition;
  readonly end: VsPosition;
}
export interface VsUri {
  toString(): string;
}
export interface VsDiagnostic {
  readonly range: VsRange;
  readonly message: string;
  /** VS Code's `DiagnosticSeverity`: 0 error .. 3 hint (LSP's minus one). */
  readonly severity: number;
  readonly source?: string;
  readonly code?: string | number | { value: string | number; target: unknown };
}
export interface VsLocation {
  readonly uri: VsUri;
  readonly range: VsRange;
}
export interface VsLocationLink {
  readonly targetUri: VsUri;
  readonly targetRange: VsRange;
  readonly targetSelectionRange?: VsRange;
}
export interface VsDocumentSymbol {
  readonly name: string;
  readonly detail?: string;
  /** VS Code's `SymbolKind` (LSP's minus one). */
  readonly kind: number;
  readonly range: VsRange;
  readonly selectionRange: VsRange;
  readonly children: readonly VsDocumentSymbol[];
}
export interface VsSymbolInformation {
  readonly name: string;
  readonly containerName?: string;
  readonly kind: number;
  readonly location: VsLocation;
}

/** A diagnostic as tsserver's protocol sends it: 1-based lines, 1-based UTF-16 offsets. */
export interface TsDiagnostic {
  readonly start: { readonly line: number; readonly offset: number };
  readonly end: { readonly line: number; readonly offset: number };
  readonly text: string;
  /** "error" | "warning" | "suggestion" | "message" */
  readonly category: string;
  readonly code?: number;
  readonly source?: string;
}

/** VS Code's TypeScript service (the built-in extension's `typescript.tsserverRequest`). */
export interface TsService {
  /** One part of the check of a document VS Code holds, for its current text (VS Code sends
   * pending changes first); rejects when there is no TypeScript service to answer. */
  check(part: TsCheck, uri: string): Promise<readonly TsDiagnostic[]>;
  /** `typescript.reportStyleChecksAsWarnings`. */
  styleChecksAsWarnings(): boolean;
}

/** What this needs from VS Code (see `vscodeIntelEditor` in serverHost.ts). */
export interface IntelEditor {
  /** The Problems list: one file's, or every file's. */
  diagnostics(uri: string): readonly VsDiagnostic[];
  allDiagnostics(): readonly [VsUri, readonly VsDiagnostic[]][];
  /** Subscribe to `languages.onDidChangeDiagnostics` (the uris whose problems changed). */
  onDidChangeDiagnostics(listener: (uris: readonly VsUri[]) => void): { dispose(): void };
  /** Subscribe to `workspace.onDidChangeTextDocument` (changes of a document's text). */
  onDidChangeText(listener: (uri: VsUri) => void): { dispose(): void };
  /** `commands.executeCommand`. */
  execute<T>(command: string, uri: string | undefined, ...rest: unknown[]): Thenable<T> | Promise<T>;
  /** Whether the editor holds the document (open in any way, shown or not). */
  isOpen(uri: string): boolean;
  /** `workspace.openTextDocument` without showing it (definitions, symbols). */
  open(uri: string): Thenable<unknown> | Promise<unknown>;
  /** Whether an editor tab shows the document (VS Code's TypeScript checks only those). */
  hasTab(uri: string): boolean;
  /** Show the document in a preview tab without taking the focus, so its language server checks it. */
  show(uri: string): Thenable<unknown> | Promise<unknown>;
  /** The editor's spelling of a uri (`Uri.parse(uri).toString()`), to match events. */
  canonical(uri: string): string;
  /** TypeScript's checker, asked directly for TS/JS files (absent: the Problems list only). */
  readonly typescript?: TsService;
}

/** What {@link byDeadline} gives when the deadline came first. */
const LATE = Symbol("late");

/** `work`'s value, or {@link LATE} once `deadline` (a `Date.now()` time; `Infinity`: none)
 * passes first; `work` goes on either way. */
async function byDeadline<T>(work: Promise<T>, deadline: number): Promise<T | typeof LATE> {
  if (deadline === Infinity) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<typeof LATE>((r) => (timer = setTimeout(() => r(LATE), Math.max(deadline - Date.now(), 0))));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

interface Waiter {
  check(): boolean;
  resolve(): void;
}

const range = (r: VsRange): WireRange => ({
  start: { line: r.start.line, character: r.start.character },
  end: { line: r.end.line, character: r.end.character },
});

function diagnostic(d: VsDiagnostic): LspDiagnostic {
  const out: LspDiagnostic = { range: range(d.range), message: d.message, severity: d.severity + 1 };
  if (d.source) out.source = d.source;
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  if (code !== undefined) out.code = code;
  return out;
}

/** What VS Code's TypeScript extension makes of a tsserver diagnostic (the same severity,
 * range, source and code), so the two sources describe a problem the same way. */
export function fromTs(d: TsDiagnostic, styleChecksAsWarnings: boolean): VsDiagnostic {
  const at = (p: { line: number; offset: number }) => ({ line: Math.max(p.line - 1, 0), character: Math.max(p.offset - 1, 0) });
  const style = styleChecksAsWarnings && d.category === "error" && d.code !== undefined && TS_STYLE_CHECKS.has(d.code);
  const severity = style ? 1 : d.category === "warning" ? 1 : d.category === "suggestion" ? 3 : 0;
  const out: { -readonly [K in keyof VsDiagnostic]: VsDiagnostic[K] } = { range: { start: at(d.start), end: at(d.end) }, message: d.text, severity, source: d.source || "ts" };
  if (d.code) out.code = d.code;
  return out;
}

function location(l: VsLocation | VsLocationLink): LspLocation {
  if ("targetUri" in l) return { uri: l.targetUri.toString(), range: range(l.targetSelectionRange ?? l.targetRange) };
  return { uri: l.uri.toString(), range: range(l.range) };
}

function documentSymbol(s: VsDocumentSymbol): LspDocumentSymbol {
  const out: LspDocumentSymbol = {
    name: s.name,
    kind: s.kind + 1,
    range: range(s.range),
    selectionRange: range(s.selectionRange),
    children: s.children.map(documentSymbol),
  };
  if (s.detail) out.detail = s.detail;
  return out;
}

function symbolInformation(s: VsSymbolInformation): LspSymbolInformation {
  const out: LspSymbolInformation = { name: s.name, kind: s.kind + 1, location: location(s.location) };
  if (s.containerName) out.containerName = s.containerName;
  return out;
}

function isDocumentSymbol(s: VsDocumentSymbol | VsSymbolInformation): s is VsDocumentSymbol {
  return "selectionRange" in s && Array.isArray((s as VsDocumentSymbol).children);
}

const LOCATION_COMMANDS = {
  definition: "vscode.executeDefinitionProvider",
  references: "vscode.executeReferenceProvider",
  implementation: "vscode.executeImplementationProvider",
} as const;

/**
 * Answers the three requests. Each file's diagnostics carry a version that grows with every
 * `onDidChangeDiagnostics` naming it, and with every answer of TypeScript's checker, so the
 * server can tell a re-check from an old answer. For other files an `after` wait also wants the
 * update to have come after the file's last text change: a language server that checks a file
 * just opened may publish for the text before the agent's edit, and that is not the re-check of
 * the edit.
 */
export class EditorIntel {
  private readonly versions = new Map<string, number>();
  /** When (a tick of {@link clock}) a file's problems, or its text, last changed. */
  private readonly diagnosedAt = new Map<string, number>();
  private readonly editedAt = new Map<string, number>();
  /** `Date.now()` of a file's last diagnostics update. */
  private readonly diagnosedTime = new Map<string, number>();
  private clock = 0;
  /** TypeScript checks under way, and the {@link clock} tick of the text they check. */
  private readonly tsChecks = new Map<string, { at: number; result: Promise<readonly TsDiagnostic[]> }>();
  private readonly waiters = new Set<Waiter>();
  private readonly subscriptions: { dispose(): void }[];

  constructor(private readonly editor: IntelEditor) {
    this.subscriptions = [
      editor.onDidChangeDiagnostics((uris) => {
        for (const uri of uris) {
          const key = uri.toString();
          this.versions.set(key, (this.versions.get(key) ?? 0) + 1);
          this.diagnosedAt.set(key, ++this.clock);
          this.diagnosedTime.set(key, Date.now());
        }
        for (const w of [...this.waiters]) if (w.check()) w.resolve();
      }),
      editor.onDidChangeText((uri) => {
        this.editedAt.set(uri.toString(), ++this.clock);
      }),
    ];
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    for (const w of [...this.waiters]) w.resolve();
  }

  /** The file's problems were updated since its text last changed. */
  private checkedSinceEdit(uri: string): boolean {
    const key = this.editor.canonical(uri);
    return (this.diagnosedAt.get(key) ?? 0) > (this.editedAt.get(key) ?? 0);
  }

  /** How often this file's problems were updated since the extension started. */
  version(uri: string): number {
    return this.versions.get(this.editor.canonical(uri)) ?? 0;
  }

  async diagnostics(params: EditorDiagnosticsParams): Promise<EditorDiagnosticsResult> {
    if (params.uris === null) {
      const files = this.editor
        .allDiagnostics()
        .filter(([, ds]) => ds.length > 0)
        .map(([uri, ds]) => this.file(uri.toString(), ds));
      return { files };
    }
    const after = params.after ?? {};
    const wait = Object.keys(after).length > 0 ? Math.min(Math.max(params.waitMs, 0), MAX_WAIT_MS) : 0;
    const started = Date.now();
    // TS/JS files: TypeScript's checker says what it finds in the current text. The Problems
    // list cannot say which text its problems belong to (see `fromProblemsList`).
    const checked = new Map<string, FileDiagnosticsItem>();
    // Checks still running at the deadline: the Problems list answers as it is (the server asks
    // again while it waits, and the running check is shared).
    const late = new Set<string>();
    const ts = this.editor.typescript;
    if (ts) {
      const deadline = started + (wait > 0 ? wait : TS_SNAPSHOT_MS);
      const files = params.uris.filter((u) => u.startsWith("file:") && TS_FILE.test(u.split(/[?#]/)[0]!));
      await Promise.all(
        files.map(async (u) => {
          const item = await this.checkTs(ts, u, deadline);
          if (item === "late") late.add(u);
          else if (item !== "failed") checked.set(u, item);
        }),
      );
    }
    // Files TypeScript does not check, or could not (no service): the Problems list.
    const rest = params.uris.filter((u) => !checked.has(u) && !late.has(u));
    if (rest.length > 0) {
      const left = Object.fromEntries(Object.entries(after).filter(([u]) => rest.includes(u)));
      await this.fromProblemsList(rest, left, started, wait);
    }
    return { files: params.uris.map((u) => checked.get(u) ?? this.file(u, this.editor.diagnostics(u))) };
  }

  /**
   * Waits until the Problems list of `uris` answers for their current text, as far as it can
   * tell: VS Code's diagnostics carry no document version, so a re-check (for `after`) is an
   * update after the file's last text change followed by {@link QUIET_MS} of quiet, and a file
   * just opened gets {@link FIRST_CHECK_MS} for its first check. Both count from `started`, the
   * request's arrival: time spent waiting on TypeScript is not added to them.
   */
  private async fromProblemsList(uris: readonly string[], after: Readonly<Record<string, number | undefined>>, started: number, wait: number): Promise<void> {
    const opened = await this.openUnopened(uris, true, started + FIRST_CHECK_MS);
    const listed = Object.keys(after);
    if (listed.length > 0) {
      const deadline = started + wait;
      await this.until(() => listed.every((u) => this.version(u) > (after[u] ?? 0) && this.checkedSinceEdit(u)), deadline - Date.now());
      await this.quiet(listed, deadline);
    } else if (opened.length > 0) {
      // A file that was not open has not been checked yet: give its first check a moment,
      // so the answer (the server's "before") is not the empty list of an unchecked file.
      const base = new Map(opened.map((u) => [u, this.version(u)]));
      await this.until(() => opened.every((u) => this.version(u) > (base.get(u) ?? 0)), started + FIRST_CHECK_MS - Date.now());
    }
  }

  /**
   * The file's problems as TypeScript's checker finds them in its current text, by `deadline`;
   * "late" when the check is still running then, "failed" when TypeScript cannot answer (no
   * service, an error). Each answer is a new version: it is a check of the text as it is now.
   */
  private async checkTs(ts: TsService, uri: string, deadline: number): Promise<FileDiagnosticsItem | "late" | "failed"> {
    const check = (async () => {
      // tsserver checks only documents VS Code holds; opening one (no tab) hands it over.
      if (!this.editor.isOpen(uri)) await this.editor.open(uri);
      try {
        return await this.tsCheck(ts, uri);
      } catch {
        // Once more: a refusal can be passing (a request cancelled while tsserver reloads).
        await new Promise((r) => setTimeout(r, TS_RETRY_MS));
        return this.tsCheck(ts, uri);
      }
    })();
    try {
      const found = await byDeadline(check, deadline);
      if (found === LATE) return "late";
      const key = this.editor.canonical(uri);
      this.versions.set(key, (this.versions.get(key) ?? 0) + 1);
      const style = ts.styleChecksAsWarnings();
      return { uri, version: this.version(uri), diagnostics: found.map((d) => diagnostic(fromTs(d, style))) };
    } catch {
      return "failed";
    } finally {
      check.catch(() => undefined);
    }
  }

  /** The three parts of TypeScript's check of `uri`. A check still running for the same text
   * is shared, so a slow tsserver is not sent the same questions again and again. */
  private tsCheck(ts: TsService, uri: string): Promise<readonly TsDiagnostic[]> {
    const key = this.editor.canonical(uri);
    const running = this.tsChecks.get(key);
    if (running && running.at >= (this.editedAt.get(key) ?? 0)) return running.result;
    const result = Promise.all(TS_CHECKS.map((part) => ts.check(part, uri))).then((parts) => parts.flat());
    const entry = { at: this.clock, result };
    this.tsChecks.set(key, entry);
    const done = () => {
      if (this.tsChecks.get(key) === entry) this.tsChecks.delete(key);
    };
    result.then(done, done);
    return result;
  }

  async locations(params: EditorLocationsParams): Promise<EditorLocationsResult> {
    const uri = params.textDocument.uri;
    await this.openUnopened([uri]);
    const position = { line: params.position.line, character: params.position.character };
    const found = await this.editor.execute<(VsLocation | VsLocationLink)[] | undefined>(LOCATION_COMMANDS[params.kind], uri, position);
    return { locations: (found ?? []).map(location) };
  }

  async symbols(params: EditorSymbolsParams): Promise<EditorSymbolsResult> {
    if (params.textDocument) {
      const uri = params.textDocument.uri;
      await this.openUnopened([uri]);
      const found = await this.editor.execute<(VsDocumentSymbol | VsSymbolInformation)[] | undefined>("vscode.executeDocumentSymbolProvider", uri);
      return { symbols: (found ?? []).map((s) => (isDocumentSymbol(s) ? documentSymbol(s) : symbolInformation(s))) };
    }
    const found = await this.editor.execute<VsSymbolInformation[] | undefined>("vscode.executeWorkspaceSymbolProvider", undefined, params.query ?? "");
    return { symbols: (found ?? []).map(symbolInformation) };
  }

  // -------------------------------------------------------------------------

  private file(uri: string, ds: readonly VsDiagnostic[]): FileDiagnosticsItem {
    return { uri, version: this.version(uri), diagnostics: ds.map(diagnostic) };
  }

  /**
   * Open the `file:` documents the editor does not hold; for diagnostics also show the ones no
   * tab shows (in a preview tab, the focus kept): VS Code's TypeScript reports problems only for
   * files shown in tabs. Returns the ones it opened or showed.
   */
  private async openUnopened(uris: readonly string[], forDiagnostics = false, deadline = Infinity): Promise<string[]> {
    const files = uris.filter((u) => u.startsWith("file:"));
    const missing = files.filter((u) => !this.editor.isOpen(u) || (forDiagnostics && !this.editor.hasTab(u)));
    const opened: string[] = [];
    const all = Promise.all(
      missing.map(async (u) => {
        try {
          await (forDiagnostics ? this.editor.show(u) : this.editor.open(u));
          opened.push(u);
        } catch {
          // A file that is gone or binary has no problems to report; answer the rest.
        }
      }),
    );
    // A slow tab does not hold the answer up: the file counts as shown, and is being shown.
    if ((await byDeadline(all, deadline)) === LATE) return missing;
    return opened;
  }

  /** Resolves once no file of `uris` had its problems updated for {@link QUIET_MS}, or at `deadline`. */
  private async quiet(uris: readonly string[], deadline: number): Promise<void> {
    for (;;) {
      const last = Math.max(0, ...uris.map((u) => this.diagnosedTime.get(this.editor.canonical(u)) ?? 0));
      const now = Date.now();
      const left = Math.min(last + QUIET_MS, deadline) - now;
      if (left <= 0) return;
      await new Promise((r) => setTimeout(r, left));
    }
  }

  /** Resolves once `check()` holds (checked now and on every diagnostics change) or after `ms`. */
  private until(check: () => boolean, ms: number): Promise<void> {
    if (check() || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = {
        check,
        resolve: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(() => waiter.resolve(), ms);
      this.waiters.add(waiter);
    });
  }
}
