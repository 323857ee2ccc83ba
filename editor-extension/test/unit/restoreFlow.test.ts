import { beforeEach, describe, expect, it } from "vitest";
import { __mock, window, type Uri } from "../vscode-mock/vscode";
import type { CheckpointInfo, RestoreFile, RestoreFilesResult, RestoreParams, RestorePreviewResult } from "../../src/protocol/types";
import {
  CHECKPOINT_SCHEME,
  compareView,
  docKey,
  restoreQuestion,
  restoreView,
  RestoreFlow,
  type ChangesView,
  type RestoreChoice,
  type RestoreQuestion,
  type RestoreUi,
} from "../../src/restore/restoreFlow";
import { RESTORE_PENDING_KEY, VsCodeRestoreUi } from "../../src/restore/vscodeRestoreUi";

const ROOT = "/work/project";

function point(over: Partial<CheckpointInfo> = {}): CheckpointInfo {
  return {
    checkpointId: "rp-0000000000000001-abcdef",
    kind: "turn",
    sessionId: "s1",
    runId: "r1",
    turnIndex: 0,
    createdAt: 1_700_000_000_000,
    label: "refactor the parser",
    userMessage: "refactor the parser",
    changedFiles: [],
    changedCount: 0,
    restores: null,
    root: ROOT,
    rootUri: `file://${ROOT}`,
    ...over,
  };
}

function file(name: string, action: RestoreFile["action"], over: Partial<RestoreFile> = {}): RestoreFile {
  const path = `${ROOT}/${name}`;
  return {
    path,
    uri: `file://${path}`,
    action,
    handChanged: false,
    unsaved: false,
    binary: false,
    oldText: action === "create" ? null : `now ${name}\n`,
    newText: action === "delete" ? null : `then ${name}\n`,
    diff: "",
    textOmitted: false,
    protected: false,
    ...over,
  };
}

function preview(files: RestoreFile[], over: Partial<CheckpointInfo> = {}): RestorePreviewResult {
  return { checkpoint: point(over), files, handChanged: files.filter((f) => f.handChanged).map((f) => f.path), skipped: [] };
}

describe("the restore as a diff view", () => {
  it("shows each file now (left) and after the restore (right); created and deleted files have one side", () => {
    const view = restoreView(preview([file("a.py", "modify"), file("gone.md", "create"), file("new.txt", "delete")]));
    expect(view.title).toBe("Restore to “refactor the parser”");
    const [modify, create, remove] = view.entries;
    expect(modify!.resource).toBe(`file://${ROOT}/a.py`);
    expect(view.contents.get(docKey(modify!.original as never))).toBe("now a.py\n");
    expect(view.contents.get(docKey(modify!.modified as never))).toBe("then a.py\n");
    expect(create!.original).toBeUndefined();
    expect(view.contents.get(docKey(create!.modified as never))).toBe("then gone.md\n");
    expect(remove!.modified).toBeUndefined();
  });

  it("compares the checkpoint's text with the live file", () => {
    const view = compareView(preview([file("a.py", "modify"), file("gone.md", "create"), file("new.txt", "delete")]));
    expect(view.title).toBe("Changes since “refactor the parser”");
    const [modify, deletedSince, createdSince] = view.entries;
    expect(modify!.modified).toEqual({ file: `file://${ROOT}/a.py` });
    expect(view.contents.get(docKey(modify!.original as never))).toBe("then a.py\n");
    expect(deletedSince!.modified).toBeUndefined();
    expect(createdSince!.original).toBeUndefined();
    expect(createdSince!.modified).toEqual({ file: `file://${ROOT}/new.txt` });
  });

  it("says why a file's text is not shown", () => {
    const view = restoreView(preview([file("img.png", "modify", { binary: true, textOmitted: true, oldText: null, newText: null })]));
    const [entry] = view.entries;
    expect(view.contents.get(docKey(entry!.original as never))).toMatch(/binary/);
  });

  it("asks with the hand-changed files named, and offers only what applies", () => {
    const q = restoreQuestion(preview([file("a.py", "modify"), file("mine.py", "modify", { handChanged: true })]), true);
    expect(q.title).toBe("Restore 2 files to how they were before “refactor the parser”?");
    expect(q.note).toBe("1 changed by you since then is kept: mine.py");
    expect(q.choices.map((c) => c.choice)).toEqual(["filesAndConversation", "filesOnly", "overwriteAll"]);
    expect(q.choices[0]!.detail).toMatch(/keeps mine\.py, and removes this message/);
    expect(q.choices[2]!.detail).toMatch(/overwrites mine\.py/);
    const nothing = restoreQuestion(preview([]), true);
    expect(nothing.title).toMatch(/are as they were/);
    expect(nothing.choices.map((c) => [c.choice, c.label])).toEqual([["filesAndConversation", "Restore Conversation"]]);
    expect(restoreQuestion(preview([file("a.py", "modify")]), false).choices.map((c) => c.choice)).toEqual(["filesOnly"]);
  });
});

class FakeUi implements RestoreUi {
  shown: ChangesView[] = [];
  closed: ChangesView[] = [];
  asked: RestoreQuestion[] = [];
  synced: { files: { path: string; deleted: boolean }[]; overwrite: boolean }[] = [];
  infos: string[] = [];
  constructor(private readonly answer: RestoreChoice | undefined) {}
  showChanges(view: ChangesView): Promise<void> {
    this.shown.push(view);
    return Promise.resolve();
  }
  confirm(question: RestoreQuestion): Promise<RestoreChoice | undefined> {
    this.asked.push(question);
    return Promise.resolve(this.answer);
  }
  closeChanges(view: ChangesView): Promise<void> {
    this.closed.push(view);
    return Promise.resolve();
  }
  syncEditors(files: { path: string; uri: string; deleted: boolean }[], overwrite: boolean): Promise<void> {
    this.synced.push({ files: files.map((f) => ({ path: f.path, deleted: f.deleted })), overwrite });
    return Promise.resolve();
  }
  info(message: string): void {
    this.infos.push(message);
  }
}

function fakeClient(p: RestorePreviewResult) {
  const restores: RestoreParams[] = [];
  const result: RestoreFilesResult = {
    checkpoint: p.checkpoint,
    undoCheckpoint: point({ kind: "restore", checkpointId: "rp-0000000000000002-abcdef" }),
    restored: p.files.filter((f) => !f.handChanged).map((f) => ({ path: f.path, uri: f.uri, status: f.action === "delete" ? "deleted" : "modified" })),
    kept: p.files.filter((f) => f.handChanged).map((f) => f.path),
    skipped: [],
    removedRuns: [],
    prompt: null,
  };
  return {
    restores,
    client: {
      restorePreview: () => Promise.resolve(p),
      restore: (params: RestoreParams) => {
        restores.push(params);
        return Promise.resolve(result);
      },
    },
  };
}

describe("RestoreFlow", () => {
  const files = [file("a.py", "modify"), file("new.txt", "delete"), file("mine.py", "modify", { handChanged: true })];

  it("previews, asks, restores files and conversation, and brings open editors in line", async () => {
    const ui = new FakeUi("filesAndConversation");
    const { client, restores } = fakeClient(preview(files));
    const result = await new RestoreFlow(client as never, ui).restoreTo("rp-0000000000000001-abcdef");
    expect(ui.shown).toHaveLength(1);
    expect(ui.closed).toEqual(ui.shown);
    expect(restores).toEqual([{ checkpointId: "rp-0000000000000001-abcdef", conversation: true, forceAll: false }]);
    expect(ui.synced).toEqual([
      {
        files: [
          { path: `${ROOT}/a.py`, deleted: false },
          { path: `${ROOT}/new.txt`, deleted: true },
        ],
        overwrite: false,
      },
    ]);
    expect(ui.infos.join()).toMatch(/kept 1 file you changed: mine\.py/);
    expect(result?.undoCheckpoint?.kind).toBe("restore");
  });

  it("files only, or overwriting the hand changes too", async () => {
    for (const [choice, expected] of [
      ["filesOnly", { conversation: false, forceAll: false }],
      ["overwriteAll", { conversation: true, forceAll: true }],
    ] as const) {
      const ui = new FakeUi(choice);
      const { client, restores } = fakeClient(preview(files));
      await new RestoreFlow(client as never, ui).restoreTo("rp-0000000000000001-abcdef");
      expect(restores).toEqual([{ checkpointId: "rp-0000000000000001-abcdef", ...expected }]);
    }
  });

  it("a protected file is named with the warning, and confirmed to the server only with the answer", async () => {
    const guarded = [...files, file(".vscode/settings.json", "modify", { protected: true }), file(".nvim.lua", "delete", { protected: true })];
    const q = restoreQuestion(preview(guarded), true);
    expect(q.protectedPaths).toEqual([`${ROOT}/.vscode/settings.json`]); // removing one writes nothing
    expect(q.warning).toContain("(.vscode/settings.json)");
    expect(q.warning).toContain("always need your approval");
    expect(restoreQuestion(preview(files), true).warning).toBeUndefined();
    const ui = new FakeUi("filesOnly");
    const { client, restores } = fakeClient(preview(guarded));
    await new RestoreFlow(client as never, ui).restoreTo("rp-0000000000000001-abcdef");
    expect(ui.asked[0]!.warning).toBe(q.warning);
    expect(restores).toEqual([
      { checkpointId: "rp-0000000000000001-abcdef", conversation: false, forceAll: false, confirmProtected: [`${ROOT}/.vscode/settings.json`] },
    ]);
    const dismissed = fakeClient(preview(guarded));
    await new RestoreFlow(dismissed.client as never, new FakeUi(undefined)).restoreTo("rp-0000000000000001-abcdef");
    expect(dismissed.restores).toEqual([]);
  });

  it("a dismissed confirmation restores nothing and closes the diff view", async () => {
    const ui = new FakeUi(undefined);
    const { client, restores } = fakeClient(preview(files));
    expect(await new RestoreFlow(client as never, ui).restoreTo("rp-0000000000000001-abcdef")).toBeUndefined();
    expect(restores).toEqual([]);
    expect(ui.closed).toHaveLength(1);
  });

  it("an undo checkpoint restores files only (it has no turn to go back to)", async () => {
    const ui = new FakeUi("filesOnly");
    const { client } = fakeClient(preview(files, { kind: "restore", turnIndex: null }));
    await new RestoreFlow(client as never, ui).restoreTo("rp-0000000000000001-abcdef");
    expect(ui.asked[0]!.choices.map((c) => c.choice)).toEqual(["filesOnly", "overwriteAll"]);
  });

  it("compare opens the changes, or says there are none", async () => {
    const ui = new FakeUi(undefined);
    await new RestoreFlow(fakeClient(preview(files)).client as never, ui).compare("rp-0000000000000001-abcdef");
    expect(ui.shown[0]!.title).toBe("Changes since “refactor the parser”");
    const empty = new FakeUi(undefined);
    await new RestoreFlow(fakeClient(preview([])).client as never, empty).compare("rp-0000000000000001-abcdef");
    expect(empty.shown).toEqual([]);
    expect(empty.infos[0]).toMatch(/nothing changed since/);
  });
});

describe("VsCodeRestoreUi", () => {
  beforeEach(() => __mock.reset());

  it("opens vscode.changes over checkpoint documents, and the title action answers", async () => {
    const ui = new VsCodeRestoreUi();
    const p = preview([file("a.py", "modify"), file("gone.md", "create")]);
    const view = restoreView(p);
    await ui.showChanges(view);
    const call = __mock.state.executed.find((e) => e.command === "vscode.changes")!;
    expect(call.args[0]).toBe(view.title);
    const rows = call.args[1] as [Uri, Uri | undefined, Uri | undefined][];
    expect(rows[0]![0].toString()).toBe(`file://${ROOT}/a.py`);
    expect(rows[0]![1]!.scheme).toBe(CHECKPOINT_SCHEME);
    expect(ui.provideTextDocumentContent(rows[0]![1]! as never)).toBe("now a.py\n");
    expect(ui.provideTextDocumentContent(rows[0]![2]! as never)).toBe("then a.py\n");
    expect(rows[1]![1]).toBeUndefined();

    const asked = ui.confirm(restoreQuestion(p, true), view);
    expect(__mock.state.context.get(RESTORE_PENDING_KEY)).toBe(true);
    const pick = __mock.state.quickPicks[0];
    expect(pick.visible && pick.ignoreFocusOut).toBe(true);
    expect(pick.title).toBe("lovia: Restore 2 files to how they were before “refactor the parser”?");
    expect(pick.items.map((i: { label: string }) => i.label)).toEqual(["Restore Files & Conversation", "Restore Files Only", "Cancel"]);
    expect(ui.defaultChoice()).toBe("filesAndConversation");
    ui.answer(ui.defaultChoice()); // the title's Confirm
    expect(await asked).toBe("filesAndConversation");
    expect(pick.visible).toBe(false);
    expect(__mock.state.context.get(RESTORE_PENDING_KEY)).toBe(false);
    ui.dispose();
  });

  it("closing the diff view or Escape cancels; picking a choice answers", async () => {
    const ui = new VsCodeRestoreUi();
    const p = preview([file("a.py", "modify")]);
    const view = restoreView(p);
    const tab = __mock.openTab(`${view.title} (1 file)`, {});
    const pending = ui.confirm(restoreQuestion(p, true), view);
    await window.tabGroups.close(tab);
    expect(await pending).toBeUndefined();
    expect(__mock.state.quickPicks[0].visible).toBe(false);

    const escaped = ui.confirm(restoreQuestion(p, true), view);
    __mock.state.quickPicks[1].hide();
    expect(await escaped).toBeUndefined();

    const picked = ui.confirm(restoreQuestion(p, true), view);
    __mock.state.quickPicks[2].accept("Restore Files Only");
    expect(await picked).toBe("filesOnly");
    const cancelled = ui.confirm(restoreQuestion(p, true), view);
    __mock.state.quickPicks[3].accept("Cancel");
    expect(await cancelled).toBeUndefined();

    const guarded = preview([file(".vscode/settings.json", "modify", { protected: true })]);
    const warned = ui.confirm(restoreQuestion(guarded, true), restoreView(guarded));
    expect(__mock.state.quickPicks[4].placeholder).toMatch(/^⚠ This change alters agent or editor configuration \(\.vscode\/settings\.json\)/);
    __mock.state.quickPicks[4].accept("Restore Files Only");
    expect(await warned).toBe("filesOnly");
    ui.dispose();
  });

  it("open, unmodified editors of restored files are reloaded from the disk", async () => {
    const ui = new VsCodeRestoreUi();
    const clean = __mock.openDocument(`${ROOT}/a.py`, "agent text\n");
    const dirty = __mock.openDocument(`${ROOT}/b.py`, "unsaved\n", true);
    __mock.state.files.set(`file://${ROOT}/a.py`, "restored\n");
    __mock.state.files.set(`file://${ROOT}/b.py`, "restored b\n");
    __mock.state.commands.set("workbench.action.files.revert", () => {
      const active = __mock.state.shownDocuments.at(-1);
      const doc = __mock.state.textDocuments.find((d) => d.uri.toString() === active?.uri);
      if (doc) {
        doc.text = __mock.state.files.get(doc.uri.toString()) ?? doc.text;
        doc.isDirty = false;
      }
    });
    await ui.syncEditors(
      [
        { path: `${ROOT}/a.py`, uri: `file://${ROOT}/a.py`, deleted: false },
        { path: `${ROOT}/b.py`, uri: `file://${ROOT}/b.py`, deleted: false },
      ],
      false,
    );
    expect(clean.getText()).toBe("restored\n");
    expect(dirty.getText()).toBe("unsaved\n"); // the user's unsaved text is not thrown away
    await ui.syncEditors([{ path: `${ROOT}/b.py`, uri: `file://${ROOT}/b.py`, deleted: false }], true);
    expect(dirty.getText()).toBe("restored b\n");
    ui.dispose();
  });
});
