import { afterEach, describe, expect, it } from "vitest";
import {
  EditorIntel,
  FIRST_CHECK_MS,
  MAX_WAIT_MS,
  QUIET_MS,
  TS_SNAPSHOT_MS,
  type IntelEditor,
  type TsCheck,
  type TsDiagnostic,
  type TsService,
  type VsDiagnostic,
  type VsDocumentSymbol,
  type VsUri,
} from "../../src/server/editorIntel";

const A = "file:///ws/src/a.ts";
const B = "file:///ws/src/b.ts";
const r = (l: number, c: number, l2 = l, c2 = c + 1) => ({ start: { line: l, character: c }, end: { line: l2, character: c2 } });
const uri = (s: string): VsUri => ({ toString: () => s });

/** A stand-in VS Code: a Problems list the test sets, commands it records, open documents. */
class FakeEditor implements IntelEditor {
  problems = new Map<string, VsDiagnostic[]>();
  open_ = new Set<string>();
  tabs = new Set<string>();
  opened: string[] = [];
  shown: string[] = [];
  executed: { command: string; uri: string | undefined; rest: unknown[] }[] = [];
  results = new Map<string, unknown>();
  failOpen = false;
  typescript?: TsService;
  private listeners = new Set<(uris: readonly VsUri[]) => void>();
  private textListeners = new Set<(uri: VsUri) => void>();

  diagnostics(u: string): readonly VsDiagnostic[] {
    return this.problems.get(u) ?? [];
  }
  allDiagnostics(): [VsUri, VsDiagnostic[]][] {
    return [...this.problems].map(([u, ds]) => [uri(u), ds]);
  }
  onDidChangeDiagnostics(listener: (uris: readonly VsUri[]) => void) {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }
  onDidChangeText(listener: (uri: VsUri) => void) {
    this.textListeners.add(listener);
    return { dispose: () => this.textListeners.delete(listener) };
  }
  /** What an edit applied to the document does. */
  edit(u: string): void {
    for (const l of [...this.textListeners]) l(uri(u));
  }
  execute<T>(command: string, u: string | undefined, ...rest: unknown[]): Promise<T> {
    this.executed.push({ command, uri: u, rest });
    return Promise.resolve(this.results.get(command) as T);
  }
  isOpen(u: string): boolean {
    return this.open_.has(u);
  }
  open(u: string): Promise<unknown> {
    if (this.failOpen) return Promise.reject(new Error("cannot open"));
    this.opened.push(u);
    this.open_.add(u);
    return Promise.resolve({});
  }
  openInTab(...us: string[]): void {
    for (const u of us) {
      this.open_.add(u);
      this.tabs.add(u);
    }
  }
  hasTab(u: string): boolean {
    return this.tabs.has(u);
  }
  hangShow = false;
  show(u: string): Promise<unknown> {
    if (this.failOpen) return Promise.reject(new Error("cannot open"));
    if (this.hangShow) return new Promise(() => undefined);
    this.shown.push(u);
    this.open_.add(u);
    this.tabs.add(u);
    return Promise.resolve({});
  }
  canonical(u: string): string {
    return u.replace("%2D", "-");
  }
  /** What a language server publishing does: set the list, fire the change event. */
  publish(u: string, ds: VsDiagnostic[]): void {
    this.problems.set(u, ds);
    for (const l of [...this.listeners]) l([uri(u)]);
  }
}

/** A stand-in tsserver: what each part of a check answers, and the questions it was asked. */
class FakeTs implements TsService {
  answers = new Map<TsCheck, TsDiagnostic[]>();
  asked: [TsCheck, string][] = [];
  fail = false;
  /** Answers wait for {@link release}. */
  held = false;
  style = true;
  private waiting: (() => void)[] = [];
  /** Refuse this many questions, then answer. */
  refusals = 0;
  check(part: TsCheck, u: string): Promise<readonly TsDiagnostic[]> {
    this.asked.push([part, u]);
    if (this.fail) return Promise.reject(new Error("tsserver: noServer"));
    if (this.refusals > 0) {
      this.refusals--;
      return Promise.reject(new Error("tsserver: cancelled"));
    }
    const answer = () => this.answers.get(part) ?? [];
    if (!this.held) return Promise.resolve(answer());
    return new Promise((resolve) => this.waiting.push(() => resolve(answer())));
  }
  release(): void {
    this.held = false;
    for (const w of this.waiting.splice(0)) w();
  }
  styleChecksAsWarnings(): boolean {
    return this.style;
  }
}

const tsError = (text: string, line: number, offset: number, code = 2304, category = "error"): TsDiagnostic => ({
  start: { line, offset },
  end: { line, offset: offset + 7 },
  text,
  code,
  category,
});

const error = (message: string, line = 0): VsDiagnostic => ({ range: r(line, 4), message, severity: 0, source: "ts", code: { value: 2345, target: uri("https://x") } });

let intel: EditorIntel | undefined;
afterEach(() => intel?.dispose());

describe("lovia/editor/diagnostics from VS Code's Problems list", () => {
  it("answers every uri asked, with LSP severities and codes and a version that grows on each update", async () => {
    const ed = new FakeEditor();
    ed.openInTab(A, B);
    intel = new EditorIntel(ed);
    ed.publish(A, [error("Type 'string' is not assignable to type 'number'.", 2)]);
    const first = await intel.diagnostics({ uris: [A, B], waitMs: 0 });
    expect(first.files).toEqual([
      {
        uri: A,
        version: 1,
        diagnostics: [{ range: r(2, 4), message: "Type 'string' is not assignable to type 'number'.", severity: 1, source: "ts", code: 2345 }],
      },
      { uri: B, version: 0, diagnostics: [] },
    ]);
    ed.publish(A, []); // re-published empty: still a new version
    ed.publish(A, []);
    const second = await intel.diagnostics({ uris: [A], waitMs: 0 });
    expect(second.files).toEqual([{ uri: A, version: 3, diagnostics: [] }]);
  });

  it("uris null lists the files that have problems, and only those", async () => {
    const ed = new FakeEditor();
    intel = new EditorIntel(ed);
    ed.publish(A, []);
    ed.publish(B, [{ range: r(0, 0), message: "unused", severity: 1 }]);
    const all = await intel.diagnostics({ uris: null, waitMs: 0 });
    expect(all.files).toEqual([{ uri: B, version: 1, diagnostics: [{ range: r(0, 0), message: "unused", severity: 2 }] }]);
    expect(ed.opened).toEqual([]);
    expect(ed.shown).toEqual([]);
  });

  it("with `after`, answers as soon as the file was re-checked", async () => {
    const ed = new FakeEditor();
    ed.openInTab(A);
    intel = new EditorIntel(ed);
    ed.publish(A, []);
    const started = Date.now();
    const pending = intel.diagnostics({ uris: [A], after: { [A]: 1 }, waitMs: 1000 });
    setTimeout(() => ed.publish(B, []), 20); // another file's update does not end the wait
    setTimeout(() => ed.publish(A, [error("Cannot find name 'x'.")]), 80);
    const answer = await pending;
    const took = Date.now() - started;
    expect(answer.files?.[0]?.version).toBe(2);
    expect(answer.files?.[0]?.diagnostics?.[0]?.message).toBe("Cannot find name 'x'.");
    expect(took).toBeGreaterThanOrEqual(60);
    expect(took).toBeLessThan(800);
  });

  it("with `after`, a check published in parts is answered once it went quiet", async () => {
    const ed = new FakeEditor();
    ed.openInTab(A);
    intel = new EditorIntel(ed);
    const started = Date.now();
    const pending = intel.diagnostics({ uris: [A], after: { [A]: 0 }, waitMs: 1500 });
    setTimeout(() => ed.publish(A, []), 30); // e.g. TypeScript's suggestion problems first
    setTimeout(() => ed.publish(A, [error("Cannot find name 'missing'.")]), 130);
    const answer = await pending;
    const took = Date.now() - started;
    expect(answer.files?.[0]?.version).toBe(2);
    expect(answer.files?.[0]?.diagnostics).toHaveLength(1);
    expect(took).toBeGreaterThanOrEqual(130 + QUIET_MS - 10);
    expect(took).toBeLessThan(1000);
  });

  it("with `after`, an update that came before the file's last edit is not its re-check", async () => {
    const ed = new FakeEditor();
    intel = new EditorIntel(ed);
    const before = await intel.diagnostics({ uris: [A], waitMs: 0 }); // opened: version 0 (not checked in time)
    expect(before.files?.[0]?.version).toBe(0);
    ed.publish(A, []); // the first check, of the text before the edit
    ed.edit(A); // the agent's edit lands
    const started = Date.now();
    const pending = intel.diagnostics({ uris: [A], after: { [A]: 0 }, waitMs: 1000 });
    setTimeout(() => ed.publish(A, [error("Cannot find name 'missing'.")]), 80);
    const answer = await pending;
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
    expect(answer.files?.[0]?.version).toBe(2);
    expect(answer.files?.[0]?.diagnostics?.[0]?.message).toBe("Cannot find name 'missing'.");
  });

  it("with `after`, a file that is never re-checked is answered after waitMs, and waitMs is capped", async () => {
    const ed = new FakeEditor();
    ed.openInTab(A);
    intel = new EditorIntel(ed);
    let started = Date.now();
    const answer = await intel.diagnostics({ uris: [A], after: { [A]: 0 }, waitMs: 150 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(answer.files).toEqual([{ uri: A, version: 0, diagnostics: [] }]);

    started = Date.now();
    await intel.diagnostics({ uris: [A], after: { [A]: 0 }, waitMs: 60_000 });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(MAX_WAIT_MS - 20);
    expect(took).toBeLessThan(MAX_WAIT_MS + 1000);
  }, 10_000);

  it("an `after` already passed answers at once; a uri in the editor's spelling matches", async () => {
    const ed = new FakeEditor();
    const odd = "file:///ws/src/x%2Dy.ts";
    ed.openInTab(odd);
    intel = new EditorIntel(ed);
    ed.publish("file:///ws/src/x-y.ts", []);
    await new Promise((r) => setTimeout(r, QUIET_MS + 20));
    const started = Date.now();
    const answer = await intel.diagnostics({ uris: [odd], after: { [odd]: 0 }, waitMs: 1000 });
    expect(Date.now() - started).toBeLessThan(100);
    expect(answer.files?.[0]).toEqual({ uri: odd, version: 1, diagnostics: [] });
  });

  it("shows a file no tab shows (TypeScript checks only those) and gives it its first check", async () => {
    const ed = new FakeEditor();
    intel = new EditorIntel(ed);
    const started = Date.now();
    const pending = intel.diagnostics({ uris: [A], waitMs: 0 });
    setTimeout(() => ed.publish(A, [error("boom")]), 30);
    const answer = await pending;
    expect(ed.shown).toEqual([A]);
    expect(answer.files?.[0]?.version).toBe(1);
    expect(answer.files?.[0]?.diagnostics).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(FIRST_CHECK_MS);

    // Shown now: asked again, it is not shown again and the answer is immediate.
    const again = Date.now();
    await intel.diagnostics({ uris: [A], waitMs: 0 });
    expect(ed.shown).toEqual([A]);
    expect(Date.now() - again).toBeLessThan(100);
    // A document open without a tab is shown too.
    ed.open_.add(B);
    await intel.diagnostics({ uris: [B], waitMs: 0 });
    expect(ed.shown).toEqual([A, B]);
    expect(ed.opened).toEqual([]);
  });

  it("a tab that takes long to show does not hold the answer past the server's wait", async () => {
    const ed = new FakeEditor();
    ed.hangShow = true;
    intel = new EditorIntel(ed);
    const started = Date.now();
    const answer = await intel.diagnostics({ uris: [A], waitMs: 0 });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(FIRST_CHECK_MS - 20);
    expect(took).toBeLessThan(500);
    expect(answer.files).toEqual([{ uri: A, version: 0, diagnostics: [] }]);
  });

  it("a file that cannot be opened, or is not a file, is answered empty, without waiting on it", async () => {
    const ed = new FakeEditor();
    ed.failOpen = true;
    intel = new EditorIntel(ed);
    const started = Date.now();
    const answer = await intel.diagnostics({ uris: [A, "untitled:Untitled-1"], waitMs: 0 });
    expect(Date.now() - started).toBeLessThan(100);
    expect(answer.files).toEqual([
      { uri: A, version: 0, diagnostics: [] },
      { uri: "untitled:Untitled-1", version: 0, diagnostics: [] },
    ]);
  });

  it("dispose ends pending waits", async () => {
    const ed = new FakeEditor();
    ed.openInTab(A);
    const local = new EditorIntel(ed);
    const started = Date.now();
    const pending = local.diagnostics({ uris: [A], after: { [A]: 0 }, waitMs: 1500 });
    setTimeout(() => local.dispose(), 30);
    await pending;
    expect(Date.now() - started).toBeLessThan(500);
  });
});

describe("lovia/editor/diagnostics for TS/JS files from TypeScript's checker", () => {
  it("answers in TypeScript's words with VS Code's severities and ranges, a new version each time; other files use the Problems list", async () => {
    const ed = new FakeEditor();
    const ts = (ed.typescript = new FakeTs());
    const py = "file:///ws/tool.py";
    ed.openInTab(py);
    intel = new EditorIntel(ed);
    ts.answers.set("semanticDiagnosticsSync", [tsError("Cannot find name 'missing'.", 2, 14), tsError("'x' is declared but its value is never read.", 4, 9, 6133)]);
    ts.answers.set("suggestionDiagnosticsSync", [tsError("'y' is declared but its value is never read.", 5, 7, 6133, "suggestion")]);
    ed.publish(A, []); // the Problems list says nothing (yet): not asked for a TS file
    ed.publish(py, [error("Undefined variable 'z'.")]);
    const first = await intel.diagnostics({ uris: [A, py], waitMs: 0 });
    expect(first.files).toEqual([
      {
        uri: A,
        version: 2,
        diagnostics: [
          { range: r(1, 13, 1, 20), message: "Cannot find name 'missing'.", severity: 1, source: "ts", code: 2304 },
          { range: r(3, 8, 3, 15), message: "'x' is declared but its value is never read.", severity: 2, source: "ts", code: 6133 },
          { range: r(4, 6, 4, 13), message: "'y' is declared but its value is never read.", severity: 4, source: "ts", code: 6133 },
        ],
      },
      { uri: py, version: 1, diagnostics: [{ range: r(0, 4), message: "Undefined variable 'z'.", severity: 1, source: "ts", code: 2345 }] },
    ]);
    expect(ts.asked).toEqual([
      ["syntacticDiagnosticsSync", A],
      ["semanticDiagnosticsSync", A],
      ["suggestionDiagnosticsSync", A],
    ]);
    // Opened for tsserver, not shown in a tab: the checker needs no tab.
    expect(ed.opened).toEqual([A]);
    expect(ed.shown).toEqual([]);
    // With reportStyleChecksAsWarnings off, an unused name is the error tsserver says it is.
    ts.style = false;
    const second = await intel.diagnostics({ uris: [A], waitMs: 0 });
    expect(second.files?.[0]?.version).toBe(3);
    expect(second.files?.[0]?.diagnostics?.map((d) => d.severity)).toEqual([1, 1, 4]);
  });

  it("with `after`, the answer is the checker's for the edited text, even while the Problems list still holds the old check", async () => {
    const ed = new FakeEditor();
    const ts = (ed.typescript = new FakeTs());
    ed.openInTab(A);
    intel = new EditorIntel(ed);
    const before = await intel.diagnostics({ uris: [A], waitMs: 0 });
    expect(before.files?.[0]).toEqual({ uri: A, version: 1, diagnostics: [] });
    // The agent's edit breaks the file. TypeScript publishes its syntax pass (the semantic part
    // of the previous text still in the list) and its semantic pass comes late: the Problems
    // list alone would answer "no new problems" after its quiet window.
    ed.edit(A);
    ed.publish(A, []);
    ts.answers.set("semanticDiagnosticsSync", [tsError("Cannot find name 'missing'.", 2, 14)]);
    const started = Date.now();
    const answer = await intel.diagnostics({ uris: [A], after: { [A]: 1 }, waitMs: 1500 });
    expect(Date.now() - started).toBeLessThan(QUIET_MS);
    expect(answer.files?.[0]?.version).toBeGreaterThan(1);
    expect(answer.files?.[0]?.diagnostics?.map((d) => d.message)).toEqual(["Cannot find name 'missing'."]);
  });

  it("when TypeScript cannot answer, the Problems list does, the way it does for other files", async () => {
    const ed = new FakeEditor();
    const ts = (ed.typescript = new FakeTs());
    ts.fail = true;
    intel = new EditorIntel(ed);
    const pending = intel.diagnostics({ uris: [A], waitMs: 0 });
    setTimeout(() => ed.publish(A, [error("boom")]), 30);
    const before = await pending;
    expect(ed.shown).toEqual([A]); // the Problems list of TS files needs a tab
    expect(before.files?.[0]).toMatchObject({ version: 1, diagnostics: [{ message: "boom" }] });
    ed.edit(A);
    const after = intel.diagnostics({ uris: [A], after: { [A]: 1 }, waitMs: 1500 });
    setTimeout(() => ed.publish(A, [error("Cannot find name 'missing'.")]), 60);
    const answer = await after;
    expect(answer.files?.[0]).toMatchObject({ version: 2, diagnostics: [{ message: "Cannot find name 'missing'." }] });
    expect(ts.asked.length).toBe(12); // asked each time (and once more), before falling back
  });

  it("a refusal that passes is asked once more, and the checker answers (no tab)", async () => {
    const ed = new FakeEditor();
    const ts = (ed.typescript = new FakeTs());
    ts.refusals = 1;
    ts.answers.set("semanticDiagnosticsSync", [tsError("Cannot find name 'missing'.", 2, 14)]);
    intel = new EditorIntel(ed);
    const answer = await intel.diagnostics({ uris: [A], waitMs: 0 });
    expect(answer.files?.[0]?.diagnostics?.map((d) => d.message)).toEqual(["Cannot find name 'missing'."]);
    expect(ts.asked).toHaveLength(6);
    expect(ed.shown).toEqual([]);
  });

  it("a slow checker is waited for only until the deadline; its check is shared until the text changes", async () => {
    const ed = new FakeEditor();
    const ts = (ed.typescript = new FakeTs());
    ts.held = true;
    ed.openInTab(A);
    intel = new EditorIntel(ed);
    ed.publish(A, [error("old")]);
    let started = Date.now();
    const snapshot = await intel.diagnostics({ uris: [A], waitMs: 0 });
    let took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(TS_SNAPSHOT_MS - 20);
    expect(took).toBeLessThan(TS_SNAPSHOT_MS + 300);
    expect(snapshot.files?.[0]).toMatchObject({ version: 1, diagnostics: [{ message: "old" }] }); // the Problems list's
    expect(ts.asked).toHaveLength(3);

    started = Date.now();
    const late = await intel.diagnostics({ uris: [A], after: { [A]: 1 }, waitMs: 200 });
    took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(180);
    expect(took).toBeLessThan(600);
    expect(late.files?.[0]?.version).toBe(1); // not re-checked: the server knows
    expect(ts.asked).toHaveLength(3); // the same text: the running check was shared

    ed.edit(A);
    const pending = intel.diagnostics({ uris: [A], after: { [A]: 1 }, waitMs: 1000 });
    await new Promise((r) => setTimeout(r, 20));
    expect(ts.asked).toHaveLength(6); // a new text: a new check
    ts.answers.set("semanticDiagnosticsSync", [tsError("Cannot find name 'missing'.", 2, 14)]);
    ts.release();
    const answer = await pending;
    expect(answer.files?.[0]?.version).toBe(2);
    expect(answer.files?.[0]?.diagnostics?.map((d) => d.message)).toEqual(["Cannot find name 'missing'."]);
  }, 10_000);

  it("a checker too slow for the snapshot: the Problems list answers as it is, in time and without a tab", async () => {
    const ed = new FakeEditor();
    const ts = (ed.typescript = new FakeTs());
    ts.held = true; // e.g. tsserver still loading the project
    intel = new EditorIntel(ed);
    const started = Date.now();
    const answer = await intel.diagnostics({ uris: [A], waitMs: 0 });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(TS_SNAPSHOT_MS - 20);
    expect(took).toBeLessThan(TS_SNAPSHOT_MS + FIRST_CHECK_MS - 20);
    expect(answer.files).toEqual([{ uri: A, version: 0, diagnostics: [] }]);
    expect(ed.opened).toEqual([A]); // handed to tsserver
    expect(ed.shown).toEqual([]); // a slow checker is no reason for a tab
  });
});

describe("lovia/editor/locations and symbols through the execute*Provider commands", () => {
  it("maps each kind to its command, with the position, and turns LocationLinks into Locations", async () => {
    const ed = new FakeEditor();
    intel = new EditorIntel(ed);
    ed.results.set("vscode.executeReferenceProvider", [{ uri: uri(B), range: r(3, 9) }]);
    ed.results.set("vscode.executeDefinitionProvider", [{ targetUri: uri(A), targetRange: r(0, 0, 4, 1), targetSelectionRange: r(0, 16) }]);
    const refs = await intel.locations({ kind: "references", textDocument: { uri: A }, position: { line: 0, character: 17 } });
    expect(refs).toEqual({ locations: [{ uri: B, range: r(3, 9) }] });
    const defs = await intel.locations({ kind: "definition", textDocument: { uri: B }, position: { line: 3, character: 9 } });
    expect(defs).toEqual({ locations: [{ uri: A, range: r(0, 16) }] });
    const impls = await intel.locations({ kind: "implementation", textDocument: { uri: A }, position: { line: 1, character: 2 } });
    expect(impls).toEqual({ locations: [] }); // no provider answered: undefined
    expect(ed.executed.map((e) => [e.command, e.uri, e.rest])).toEqual([
      ["vscode.executeReferenceProvider", A, [{ line: 0, character: 17 }]],
      ["vscode.executeDefinitionProvider", B, [{ line: 3, character: 9 }]],
      ["vscode.executeImplementationProvider", A, [{ line: 1, character: 2 }]],
    ]);
    expect(ed.opened).toEqual([A, B]); // opened for their language servers, once each
  });

  it("document symbols keep their tree with LSP kinds; workspace symbols are SymbolInformation", async () => {
    const ed = new FakeEditor();
    intel = new EditorIntel(ed);
    const method: VsDocumentSymbol = { name: "run", kind: 5, range: r(2, 2, 4, 3), selectionRange: r(2, 2), children: [] };
    const cls: VsDocumentSymbol = { name: "Runner", detail: "class", kind: 4, range: r(1, 0, 5, 1), selectionRange: r(1, 13), children: [method] };
    ed.results.set("vscode.executeDocumentSymbolProvider", [cls]);
    ed.results.set("vscode.executeWorkspaceSymbolProvider", [{ name: "add", kind: 11, containerName: "a.ts", location: { uri: uri(A), range: r(0, 16) } }]);
    const outline = await intel.symbols({ textDocument: { uri: A } });
    expect(outline.symbols).toEqual([
      {
        name: "Runner",
        detail: "class",
        kind: 5,
        range: r(1, 0, 5, 1),
        selectionRange: r(1, 13),
        children: [{ name: "run", kind: 6, range: r(2, 2, 4, 3), selectionRange: r(2, 2), children: [] }],
      },
    ]);
    const search = await intel.symbols({ query: "add" });
    expect(search.symbols).toEqual([{ name: "add", kind: 12, containerName: "a.ts", location: { uri: A, range: r(0, 16) } }]);
    expect(ed.executed.at(-1)).toEqual({ command: "vscode.executeWorkspaceSymbolProvider", uri: undefined, rest: ["add"] });
  });
});
