import { beforeEach, describe, expect, it } from "vitest";
import { Uri, __mock, window } from "../vscode-mock/vscode";
import { ProposalContentProvider } from "../../src/approvals/proposals";
import { WorktreeFiles } from "../../src/agents/worktreeFiles";
import { APPLY_PROTECTED, APPLY_WITHOUT_PROTECTED, WorktreeReview } from "../../src/agents/worktreeReview";
import { WorktreeRuns, type WorktreeClient } from "../../src/agents/worktreeRuns";
import { hunksOf } from "../../src/diff/hunks";
import { EventStore } from "../../src/protocol/eventStore";
import type { ReplayResult, WorktreeApplyParams, WorktreeFile, WorktreeRun } from "../../src/protocol/types";

const OLD = "# hello\n\nbody\n";
const NEW = "# hello — variant A\n\nbody\n";

const run = (runId: string): WorktreeRun => ({
  runId,
  sessionId: `s_${runId}`,
  state: "active",
  runStatus: "completed",
  prompt: `Tidy up ${runId}`,
  branch: `lovia/tidy-${runId}`,
  path: `/state/worktrees/${runId}`,
  workspace: "/work/project",
  base: "c0",
  createdAt: 1,
  usage: null,
});

const readme = (over: Partial<WorktreeFile> = {}): WorktreeFile => ({
  path: "README.md",
  uri: "file:///work/project/README.md",
  status: "modified",
  binary: false,
  oldText: OLD,
  newText: NEW,
  patch: "",
  verdict: "clean",
  ...over,
}) as WorktreeFile;

function setup(files: WorktreeFile[], applied = true) {
  const applies: WorktreeApplyParams[] = [];
  let open = ["r_a", "r_b"];
  const client = {
    worktreeList: async () => ({ worktrees: open.map(run) }),
    worktreeDiff: async ({ runId }: { runId: string }) => ({ runId, branch: "b", base: "c0", files, skipped: [] }),
    worktreeApply: async (params: WorktreeApplyParams) => {
      applies.push(params);
      if (applied) open = open.filter((id) => id !== params.runId && !(params.alsoDiscard ?? []).includes(id));
      return applied
        ? { runId: params.runId, applied: true, files: ["README.md"], conflicts: [], checkpointId: "cp1", discarded: params.alsoDiscard ?? [] }
        : { runId: params.runId, applied: false, files: [], conflicts: [readme({ verdict: "conflict", newText: null, reason: "you changed the same lines" })], discarded: [] };
    },
  } as unknown as WorktreeClient;
  const store = new EventStore({ replay: async () => ({ events: [], status: "completed", lastSeq: 0 }) as unknown as ReplayResult });
  const runs = new WorktreeRuns(client, store);
  const proposals = new ProposalContentProvider();
  const worktreeFiles = new WorktreeFiles(runs);
  const review = new WorktreeReview(client, runs, proposals, worktreeFiles);
  return { applies, runs, proposals, review, worktreeFiles };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

beforeEach(() => __mock.reset());

describe("applying a worktree run", () => {
  it("reviews each file like an approval and lands the text the user left, discarding the others", async () => {
    const { applies, runs, proposals, review } = setup([readme(), readme({ path: "logo.png", uri: "file:///work/project/logo.png", binary: true, oldText: null, newText: null })]);
    await runs.refresh();
    const done = review.start("r_a", ["r_b"]);
    await settle();
    // One diff editor (the binary file lands as it is): the workspace's text ↔ what applying writes.
    const [tab] = __mock.diffTabs();
    expect(__mock.diffTabs()).toHaveLength(1);
    expect([tab!.original.scheme, tab!.modified.scheme]).toEqual(["lovia-original", "lovia-proposed"]);
    expect(tab!.modified.path).toBe("/worktree-r_a/0/README.md");
    expect(proposals.provideTextDocumentContent(tab!.original)).toBe(OLD);
    expect(__mock.state.context.get("lovia.worktreeReview")).toBe(true);
    expect(__mock.state.messages.at(-1)?.text).toContain("2 files (1 deleted, binary or already there, landing as they are)");
    // The buttons are in the diff editor (a toast's would outlive the review).
    expect(__mock.state.messages.at(-1)?.items).toEqual([]);

    // CodeLens: apply / cancel on top, one "reject hunk" per hunk.
    const lenses = review.provideCodeLenses({ uri: tab!.modified } as never);
    const hunk = hunksOf(OLD, NEW, 0)[0]!;
    expect(lenses.map((l) => [l.command!.command, l.command!.arguments])).toEqual([
      ["lovia.agents.applyReviewed", ["worktree-r_a"]],
      ["lovia.agents.cancelReview", ["worktree-r_a"]],
      ["lovia.agents.rejectHunk", ["worktree-r_a", 0, hunk.id]],
    ]);
    // An approval's proposal gets none of these lenses.
    expect(review.provideCodeLenses({ uri: Uri.from({ scheme: "lovia-proposed", path: "/ap1/0/x.ts" }) } as never)).toEqual([]);

    // The user edits the proposed side, then applies from the editor title (its URI).
    const edited = "# hello — variant A (edited)\n\nbody\n";
    proposals.fileSystem().writeFile(tab!.modified, Buffer.from(edited), { create: false, overwrite: true });
    await review.apply(review.target(tab!.modified));
    expect(applies).toEqual([{ runId: "r_a", edits: [{ path: "README.md", newText: edited }], alsoDiscard: ["r_b"] }]);
    expect(await done).toMatchObject({ applied: true, discarded: ["r_b"] });
    expect(__mock.diffTabs()).toEqual([]);
    expect(__mock.state.context.get("lovia.worktreeReview")).toBe(false);
    expect(runs.rows()).toEqual([]);
    expect(__mock.state.messages.at(-1)?.text).toContain("discarded 1 other run");
  });

  it("shows conflicts as diffs of the workspace against the run's read-only version, and applies nothing", async () => {
    const conflict = readme({ verdict: "conflict", newText: null, oldText: "# mine\n", reason: "you changed the same lines" });
    const { applies, runs, review, worktreeFiles } = setup([conflict]);
    await runs.refresh();
    expect(await review.start("r_a")).toBeUndefined();
    expect(applies).toEqual([]);
    const [tab] = __mock.diffTabs();
    expect(tab!.original.toString()).toBe("file:///work/project/README.md");
    expect([tab!.modified.scheme, tab!.modified.path]).toEqual(["lovia-worktree", "/r_a/README.md"]);
    expect(__mock.state.messages.at(-1)).toMatchObject({ level: "warning" });
    expect(__mock.state.messages.at(-1)!.text).toContain("README.md (you changed the same lines). Nothing was applied");
    // The run's side is read from its worktree on disk.
    __mock.state.files.set(Uri.file("/state/worktrees/r_a/README.md").toString(), NEW);
    expect(await worktreeFiles.provideTextDocumentContent(tab!.modified)).toBe(NEW);
  });

  it("a conflict found while applying (the workspace moved meanwhile) writes nothing and shows it", async () => {
    const { runs, review } = setup([readme()], false);
    await runs.refresh();
    const done = review.start("r_a");
    await settle();
    await review.apply(review.target(undefined));
    expect(await done).toMatchObject({ applied: false });
    expect(__mock.diffTabs().map((t) => t.modified.scheme)).toEqual(["lovia-worktree"]);
    expect(__mock.state.messages.at(-1)!.text).toContain("Nothing was applied");
    expect(runs.rows().map((r) => r.runId)).toEqual(["r_a", "r_b"]);
  });

  it("asks in a message when nothing can be shown in an editor (a deleted file)", async () => {
    const { applies, runs, review } = setup([readme({ status: "deleted", newText: null })]);
    await runs.refresh();
    __mock.state.messageAnswers.push("Apply Reviewed Changes");
    const done = review.start("r_a");
    expect(await done).toMatchObject({ applied: true });
    expect(__mock.diffTabs()).toEqual([]);
    expect(applies).toEqual([{ runId: "r_a", edits: [], alsoDiscard: [] }]);
  });

  it("cancelling the review closes it and asks nothing of the server", async () => {
    const { applies, runs, review } = setup([readme()]);
    await runs.refresh();
    const done = review.start("r_a");
    await settle();
    await review.cancel(review.target(undefined));
    expect(await done).toBeUndefined();
    expect(applies).toEqual([]);
    expect(__mock.diffTabs()).toEqual([]);
  });

  describe("a protected file (editor, git, CI or agent configuration)", () => {
    const settings = readme({ path: ".vscode/settings.json", uri: "file:///work/project/.vscode/settings.json", oldText: null, newText: '{"x": 1}\n', status: "added", protected: true });

    async function reviewed(answer: string | undefined) {
      const ctx = setup([readme(), settings]);
      await ctx.runs.refresh();
      const done = ctx.review.start("r_a");
      await settle();
      expect(__mock.diffTabs()).toHaveLength(2);
      expect(window.tabGroups.activeTabGroup.tabs.map((t) => t.label)).toContain("settings.json (lovia: apply “Tidy up r_a” — review, protected)");
      expect(__mock.state.messages.at(-1)?.text).toContain("1 protected (you confirm them when applying)");
      __mock.state.messageAnswers.push(answer);
      await ctx.review.apply(ctx.review.target(undefined));
      const warning = __mock.state.messages.find((m) => m.level === "warning")!;
      expect(warning).toMatchObject({ level: "warning", options: { modal: true } });
      expect(warning.text).toContain(".vscode/settings.json");
      expect((warning.options as { detail: string }).detail).toContain("always need your approval");
      expect(warning.items).toEqual([APPLY_PROTECTED, APPLY_WITHOUT_PROTECTED]);
      return { ...ctx, done };
    }

    it("is applied only after the user confirmed the warning, and then named in confirmProtected", async () => {
      const { applies, done } = await reviewed(APPLY_PROTECTED);
      expect(applies).toEqual([{ runId: "r_a", edits: [], alsoDiscard: [], confirmProtected: [".vscode/settings.json"] }]);
      expect(await done).toMatchObject({ applied: true });
    });

    it("is left out when the user applies without it", async () => {
      const { applies } = await reviewed(APPLY_WITHOUT_PROTECTED);
      expect(applies).toEqual([{ runId: "r_a", edits: [], alsoDiscard: [], paths: ["README.md"] }]);
    });

    it("dismissing the warning applies nothing and keeps the review open", async () => {
      const { applies, review } = await reviewed(undefined);
      expect(applies).toEqual([]);
      expect(review.target(undefined)).toBe("worktree-r_a");
      expect(__mock.diffTabs()).toHaveLength(2);
    });
  });
});
