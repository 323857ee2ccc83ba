/**
 * Integration test: the Agents view's model (src/agents/worktreeRuns) and the protocol client's
 * `lovia/worktree/*` requests against the REAL Python server, with the offline demo agent in a
 * git repository. Two worktree runs edit README.md; the view learns of them and of their end
 * from run events alone; one lands with the reviewed text while the other is discarded in the
 * same request; a third, whose lines the user changed meanwhile, is refused as a conflict and
 * writes nothing.
 *
 * Python comes from env LOVIA_PYTHON (default `python3`); skipped when it lacks lovia or
 * there is no git.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { WorktreeRuns } from "../../src/agents/worktreeRuns";
import { ErrorCodes, EventStore, isRequestError, LoviaClient, type LoviaSettings } from "../../src/protocol";
import { buildInitializationOptions } from "../../src/server/settings";

const PYTHON = process.env.LOVIA_PYTHON ?? "python3";
const probe = spawnSync(PYTHON, ["-c", "import lovia_server.lsp.language_server"], { encoding: "utf8" });
const hasGit = spawnSync("git", ["--version"]).status === 0;
const available = probe.status === 0 && !probe.error && hasGit;
if (!available) console.warn(`[integration] worktrees SKIPPED: needs ${PYTHON} with lovia installed, and git`);

const README = "# hello project\n\nA small workspace.\n";
const SETTINGS: LoviaSettings = { maxTurns: 10, editMode: "server", permissions: { preset: "coding", write: "allow" } };

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-C", cwd, ...args], { encoding: "utf8" });
}

describe.skipIf(!available)("worktree runs through the real server", () => {
  let child: ChildProcess;
  let conn: MessageConnection;
  let client: LoviaClient;
  let store: EventStore;
  let runs: WorktreeRuns;
  let workspace: string;
  let stderr = "";

  async function until<T>(find: () => T | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
    const start = Date.now();
    for (;;) {
      const found = find();
      if (found !== undefined && found !== false) return found;
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}\nrows: ${JSON.stringify(runs.rows().map((r) => r.description))}\nserver stderr:\n${stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  const worktreeCount = () => (git(workspace, "worktree", "list", "--porcelain").match(/^worktree /gm) ?? []).length;
  const start = (note: string) => client.run({ prompt: `Tidy up the README "${note}"`, agent: "lovia:demo", cwd: workspace, isolation: "worktree" });

  beforeAll(async () => {
    workspace = mkdtempSync(join(tmpdir(), "lovia-wt-ws-"));
    const stateDir = mkdtempSync(join(tmpdir(), "lovia-wt-state-"));
    writeFileSync(join(workspace, "README.md"), README);
    git(workspace, "init", "-q", "-b", "main");
    git(workspace, "add", "-A");
    git(workspace, "-c", "user.name=Test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "initial");

    child = spawn(PYTHON, ["-m", "lovia_server"], { cwd: workspace, env: { ...process.env, PYTHONUNBUFFERED: "1" }, stdio: "pipe" });
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    conn.onRequest("workspace/configuration", (params: { items: { section?: string }[] }) => params.items.map((i) => (i.section === "lovia" ? SETTINGS : null)));
    conn.onRequest("workspace/workspaceFolders", () => [{ uri: pathToFileURL(workspace).href, name: "ws" }]);
    conn.onRequest("window/workDoneProgress/create", () => null);
    conn.onRequest("client/registerCapability", () => null);
    conn.onRequest("workspace/applyEdit", () => ({ applied: true }));
    conn.onNotification("$/progress", () => undefined);
    conn.onNotification("window/logMessage", () => undefined);
    conn.onNotification("window/showMessage", () => undefined);
    client = new LoviaClient(conn);
    store = new EventStore(client);
    client.onEvent((e) => store.ingest(e));
    runs = new WorktreeRuns(client, store, { debounceMs: 50 });
    conn.listen();
    await conn.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(workspace).href,
      workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: "ws" }],
      capabilities: { workspace: { configuration: true, workspaceFolders: true, applyEdit: true }, window: { workDoneProgress: true } },
      initializationOptions: buildInitializationOptions({ stateDir, trusted: true }),
    });
    await conn.sendNotification("initialized", {});
    await runs.refresh();
  });

  afterAll(async () => {
    runs?.dispose();
    if (!child) return;
    try {
      await Promise.race([conn.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 3000))]);
      await conn.sendNotification("exit");
    } catch {
      // The server may already be gone.
    }
    await Promise.race([new Promise((r) => child.once("exit", r)), new Promise((r) => setTimeout(r, 5000))]);
    if (child.exitCode === null) child.kill("SIGKILL");
    conn.dispose();
  });

  it("lists two runs from their events alone, lands one with its reviewed text and discards the other", async () => {
    expect(runs.rows()).toEqual([]);
    const a = await start("variant A");
    const b = await start("variant B");
    // No refresh called: run events alone bring both rows, finished, one file each.
    const rows = await until(() => {
      const r = runs.rows();
      return r.length === 2 && r.every((x) => x.status === "completed" && x.files?.length === 1) && r;
    }, "both runs finished in the model");
    expect(rows.map((r) => r.title).sort()).toEqual(['Tidy up the README "variant A"', 'Tidy up the README "variant B"']);
    expect(rows.every((r) => r.context === "agentRun.done" && r.elapsedMs !== undefined)).toBe(true);
    expect(readFileSync(join(workspace, "README.md"), "utf8")).toBe(README);
    expect(worktreeCount()).toBe(3);

    const diff = await client.worktreeDiff({ runId: a.runId });
    expect(diff.files).toMatchObject([{ path: "README.md", verdict: "clean", oldText: README, newText: "# hello project — variant A\n\nA small workspace.\n" }]);
    // The reviewed text (the user edited the proposal) lands, not the run's.
    const reviewed = "# hello project — variant A, reviewed\n\nA small workspace.\n";
    const applied = await client.worktreeApply({ runId: a.runId, edits: [{ path: "README.md", newText: reviewed }], alsoDiscard: [b.runId] });
    expect(applied).toMatchObject({ applied: true, files: ["README.md"], conflicts: [], discarded: [b.runId] });
    expect(readFileSync(join(workspace, "README.md"), "utf8")).toBe(reviewed);
    expect(worktreeCount()).toBe(1);
    expect(git(workspace, "branch", "--list", "lovia/*").trim()).toBe("");
    await runs.refresh();
    expect(runs.rows()).toEqual([]);

    // Gone is gone: the protocol's own error, by name.
    const again = await client.worktreeDiscard({ runId: b.runId }).catch((e: unknown) => e);
    expect(isRequestError(again, ErrorCodes.WorktreeNotFound)).toBe(true);
  });

  it("refuses a run whose lines the user changed meanwhile, and writes nothing", async () => {
    git(workspace, "-c", "user.name=Test", "-c", "user.email=test@example.invalid", "commit", "-qam", "landed A");
    const c = await start("variant C");
    await until(() => runs.row(c.runId)?.status === "completed" && runs.row(c.runId)?.files?.length === 1, "run C finished");
    const mine = "# my own title\n\nA small workspace.\n";
    writeFileSync(join(workspace, "README.md"), mine);
    const diff = await client.worktreeDiff({ runId: c.runId });
    expect(diff.files[0]).toMatchObject({ path: "README.md", verdict: "conflict" });
    const result = await client.worktreeApply({ runId: c.runId });
    expect(result).toMatchObject({ applied: false, files: [] });
    expect(result.conflicts.map((f) => f.path)).toEqual(["README.md"]);
    expect(readFileSync(join(workspace, "README.md"), "utf8")).toBe(mine);
    await client.worktreeDiscard({ runId: c.runId });
    expect(worktreeCount()).toBe(1);
  });
});
