/**
 * Integration test: drives the REAL Python server (`python -m lovia_server`) over stdio
 * through the extension's own protocol client (src/protocol) and event store.
 *
 * Python comes from env LOVIA_PYTHON (default `python3`). The suite is skipped, with the
 * reason printed, only when `$LOVIA_PYTHON -c "import lovia_server.lsp.language_server"` fails.
 * Run it with `npm run test:integration`.
 *
 * What it expects from the server (protocol.md v1):
 * - `initialize` with `initializationOptions.lovia` (approvals "events", editMode "server",
 *   stateDir) answers `capabilities.experimental.lovia.protocolVersion === 1`.
 * - After `initialized` it reads the `lovia` section via `workspace/configuration`; we
 *   answer with `agent: "agents.py:main"`, preset `coding`, a path rule making writes to
 *   hello.txt `ask`, and command rules allowing `sleep` and `echo`.
 * - The user agent file agents.py (written below) defines `main` and `slow`, both with
 *   `lovia.testing.ScriptedProvider` models and no workspace of their own, so the server binds
 *   the editor workspace (and its ACL from the settings); `lovia/run` may pick one with its
 *   `agent` param ("agents.py:slow").
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import {
  ErrorCodes,
  EventStore,
  isRequestError,
  LoviaClient,
  type EventOf,
  type LoviaEvent,
  type LoviaSettings,
  type RunView,
  type TranscriptItem,
} from "../../src/protocol";
import { buildInitializationOptions } from "../../src/server/settings";

const PYTHON = process.env.LOVIA_PYTHON ?? "python3";
const probe = spawnSync(PYTHON, ["-c", "import lovia_server.lsp.language_server"], { encoding: "utf8" });
const available = probe.status === 0 && !probe.error;
if (!available) {
  const why = probe.error ? probe.error.message : (probe.stderr || "").trim().split("\n").slice(-1)[0];
  console.warn(`[integration] SKIPPED: \`${PYTHON} -c "import lovia_server.lsp.language_server"\` failed (${why}). Set LOVIA_PYTHON to an interpreter with lovia installed.`);
}

const AGENTS_PY = `"""Scripted agents for the VS Code extension's integration test (no model vendor)."""
from lovia import Agent
from lovia.testing import ScriptedProvider, call, text

# Run 1: asks to overwrite hello.txt (a path rule makes the write "ask", so the server
# sends a diff), then runs a slow shell command (time to steer), then answers.
main = Agent(
    name="main",
    instructions="You are a scripted test agent.",
    model=ScriptedProvider([
        call("write_file", {"path": "hello.txt", "content": "hello from lovia\\n"}),
        call("shell", {"command": "sleep 2 && echo slept"}),
        text("All done."),
    ]),
)

# Run 2: a long shell command that the test cancels.
slow = Agent(
    name="slow",
    instructions="You are a scripted test agent.",
    model=ScriptedProvider([
        call("shell", {"command": "sleep 30"}),
        text("never reached"),
    ]),
)
`;

const SETTINGS: LoviaSettings = {
  agent: "agents.py:main",
  maxTurns: 10,
  // This client answers workspace/applyEdit without applying anything: the server writes.
  editMode: "server",
  permissions: {
    preset: "coding",
    pathRules: [{ pattern: "hello.txt", write: "ask" }],
    commandRules: [
      { pattern: "sleep", decision: "allow" },
      { pattern: "echo", decision: "allow" },
    ],
  },
};

function lookupSection(section: string | undefined): unknown {
  const root: Record<string, unknown> = { lovia: SETTINGS };
  if (!section) return root;
  let node: unknown = root;
  for (const part of section.split(".")) {
    node = typeof node === "object" && node !== null ? (node as Record<string, unknown>)[part] : undefined;
  }
  return node ?? null;
}

function strip(run: RunView | undefined): unknown {
  return run && { status: run.status, lastSeq: run.lastSeq, items: run.items.map(({ rev: _r, ...i }: TranscriptItem) => i), todos: run.todos };
}

describe.skipIf(!available)("lovia_server over stdio (real server)", () => {
  let child: ChildProcess;
  let conn: MessageConnection;
  let client: LoviaClient;
  let store: EventStore;
  let workspace: string;
  const events: LoviaEvent[] = [];
  const progress: unknown[] = [];
  let stderr = "";
  let sessionId = "";
  let firstRunId = "";

  async function until<T>(find: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
    const start = Date.now();
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}\nserver stderr:\n${stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  function eventOf<K extends LoviaEvent["kind"]>(runId: string, kind: K, pred: (e: EventOf<K>) => boolean = () => true): EventOf<K> | undefined {
    return events.find((e): e is EventOf<K> => e.runId === runId && e.kind === kind && pred(e as EventOf<K>));
  }

  beforeAll(async () => {
    workspace = mkdtempSync(join(tmpdir(), "lovia-ws-"));
    const stateDir = mkdtempSync(join(tmpdir(), "lovia-state-"));
    writeFileSync(join(workspace, "agents.py"), AGENTS_PY);
    writeFileSync(join(workspace, "hello.txt"), "old text\n");

    child = spawn(PYTHON, ["-m", "lovia_server"], { cwd: workspace, env: { ...process.env, PYTHONUNBUFFERED: "1" }, stdio: "pipe" });
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    conn.onRequest("workspace/configuration", (params: { items: { section?: string }[] }) => params.items.map((i) => lookupSection(i.section)));
    conn.onRequest("workspace/workspaceFolders", () => [{ uri: pathToFileURL(workspace).href, name: "ws" }]);
    conn.onRequest("window/workDoneProgress/create", () => null);
    conn.onRequest("client/registerCapability", () => null);
    conn.onRequest("client/unregisterCapability", () => null);
    conn.onRequest("workspace/applyEdit", () => ({ applied: true }));
    conn.onRequest("window/showMessageRequest", () => null);
    conn.onNotification("$/progress", (p: unknown) => {
      progress.push(p);
    });
    conn.onNotification("window/logMessage", () => undefined);
    conn.onNotification("window/showMessage", () => undefined);
    client = new LoviaClient(conn);
    store = new EventStore(client);
    client.onEvent((e) => {
      events.push(e);
      store.ingest(e);
    });
    conn.listen();

    const init = (await conn.sendRequest("initialize", {
      processId: process.pid,
      clientInfo: { name: "lovia-vscode-integration-test" },
      rootUri: pathToFileURL(workspace).href,
      workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: "ws" }],
      capabilities: {
        workspace: { configuration: true, workspaceFolders: true, applyEdit: true, workspaceEdit: { documentChanges: true }, didChangeConfiguration: { dynamicRegistration: true } },
        window: { workDoneProgress: true },
      },
      initializationOptions: buildInitializationOptions({ stateDir, trusted: true }),
    })) as { capabilities: { experimental?: { lovia?: { protocolVersion: number; methods: string[] } } } };
    expect(init.capabilities.experimental?.lovia?.protocolVersion).toBe(1);
    expect(init.capabilities.experimental?.lovia?.methods).toEqual(expect.arrayContaining(["lovia/run", "lovia/approve", "lovia/steer", "lovia/replay"]));
    await conn.sendNotification("initialized", {});
  });

  afterAll(async () => {
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

  it("runs with an approval carrying a diff; accept writes the file; a mid-run steer is delivered", async () => {
    const result = await client.run({ prompt: "Update hello.txt, then run the slow command.", cwd: workspace, agent: "agents.py:main" });
    expect(result.status).toBe("running");
    sessionId = result.sessionId;
    firstRunId = result.runId;
    const runId = result.runId;

    const ask = await until(() => eventOf(runId, "approval.requested"), "approval.requested");
    expect(ask.action).toBe("file.write");
    expect(ask.diff).toHaveLength(1);
    expect(ask.diff![0]!.path.endsWith("hello.txt")).toBe(true);
    expect(ask.diff![0]!.uri.startsWith("file://")).toBe(true);
    expect(ask.diff![0]!.oldText).toBe("old text\n");
    expect(ask.diff![0]!.newText).toBe("hello from lovia\n");
    expect(ask.options.map((o) => o.decision)).toContain("allow_once");
    const call = eventOf(runId, "tool.call", (e) => e.toolCallId === ask.toolCallId);
    expect(call?.toolKind).toBe("edit");
    // Nothing touched the disk before the decision.
    expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("old text\n");
    expect(store.get(runId)!.activity).toBe("waiting for approval");

    const approved = await client.approve({ runId, approvalId: ask.approvalId, decision: "allow_once" });
    expect(approved).toEqual({ approvalId: ask.approvalId, outcome: "allowed" });
    await until(() => eventOf(runId, "approval.resolved", (e) => e.approvalId === ask.approvalId && e.outcome === "allowed"), "approval.resolved");
    const written = await until(() => eventOf(runId, "tool.result", (e) => e.toolCallId === ask.toolCallId), "write result");
    expect(written.status).toBe("completed");
    expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("hello from lovia\n");

    // While the slow shell command runs, steer.
    await until(() => eventOf(runId, "tool.call", (e) => e.toolKind === "execute"), "shell tool.call");
    const steer = await client.steer({ runId, message: "Also say goodbye." });
    expect(steer).toMatchObject({ runId, accepted: true });
    const echoed = await until(() => eventOf(runId, "user.message", (e) => e.source === "steer" && e.messageId === steer.messageId), "steer echoed");
    expect(echoed.text).toBe("Also say goodbye.");
    // Delivered: too late to withdraw.
    expect(await client.unsteer({ runId, messageId: steer.messageId })).toEqual({ withdrawn: false });

    const finished = await until(() => eventOf(runId, "run.finished"), "run.finished");
    expect(finished.status).toBe("completed");
    const runEvents = events.filter((e) => e.runId === runId);
    expect(runEvents.map((e) => e.seq)).toEqual(runEvents.map((_, i) => i + 1));
    expect(runEvents.at(-1)!.kind).toBe("run.finished");
    expect(echoed.seq).toBeLessThan(finished.seq);
    const calls = runEvents.filter((e) => e.kind === "tool.call");
    const results = runEvents.filter((e) => e.kind === "tool.result");
    expect(results).toHaveLength(calls.length);

    // The run was shown as work-done progress with the token lovia/<runId>.
    const mine = progress.filter((p) => (p as { token?: unknown }).token === `lovia/${runId}`) as { value: { kind: string } }[];
    expect(mine[0]?.value.kind).toBe("begin");
    expect(mine.at(-1)?.value.kind).toBe("end");

    const view = store.get(runId)!;
    expect(view.status).toBe("completed");
    expect(view.items.find((i) => i.type === "assistant" && i.text.includes("All done."))).toBeDefined();
    const shell = view.items.find((i) => i.type === "tool" && i.toolKind === "execute");
    expect(shell).toMatchObject({ status: "completed" });
  });

  it("replays after a simulated reconnect: a fresh store rebuilds the same view, and a gap is filled", async () => {
    const runId = firstRunId;
    const live = store.get(runId)!;

    // A reloaded client that saw nothing live.
    const fresh = new EventStore(client);
    await fresh.load(runId);
    expect(strip(fresh.get(runId))).toEqual(strip(live));

    // A client whose connection dropped after seq 3: the next live event reveals the gap.
    const partial = new EventStore(client);
    const all = events.filter((e) => e.runId === runId);
    for (const e of all.slice(0, 3)) partial.ingest(e);
    partial.ingest(all.at(-1)!);
    await until(() => (partial.get(runId)!.lastSeq === all.length ? true : undefined), "gap filled by replay");
    expect(strip(partial.get(runId))).toEqual(strip(live));

    const half = Math.floor(all.length / 2);
    const tail = await client.replay({ runId, afterSeq: half });
    expect(tail.events.map((e) => e.seq)).toEqual(all.slice(half).map((e) => e.seq));
    expect(tail.lastSeq).toBe(all.length);
    expect(tail.status).toBe("completed");
  });

  it("cancels a running run: exactly one tool.result, then run.finished{cancelled}", async () => {
    const result = await client.run({ prompt: "Run the long command.", sessionId, cwd: workspace, agent: "agents.py:slow" });
    const runId = result.runId;
    expect(result.sessionId).toBe(sessionId);
    await until(() => eventOf(runId, "tool.call", (e) => e.toolKind === "execute"), "long shell started");
    // A second run in the same session is refused while this one is live.
    const busy = await client.run({ prompt: "again", sessionId }).catch((e: unknown) => e);
    expect(isRequestError(busy, ErrorCodes.RunAlreadyActive)).toBe(true);

    expect(await client.cancel({ runId })).toEqual({ runId, status: "cancelling" });
    const finished = await until(() => eventOf(runId, "run.finished"), "cancelled run.finished", 20_000);
    expect(finished.status).toBe("cancelled");
    const calls = events.filter((e) => e.runId === runId && e.kind === "tool.call");
    const results = events.filter((e) => e.runId === runId && e.kind === "tool.result");
    expect(results).toHaveLength(calls.length);
    expect(store.get(runId)!.status).toBe("cancelled");

    const steerLate = await client.steer({ runId, message: "too late" }).catch((e: unknown) => e);
    expect(isRequestError(steerLate, ErrorCodes.RunNotActive)).toBe(true);
  });

  it("lists the session with both runs and answers errors with protocol codes", async () => {
    const sessions = await client.sessions({});
    const mine = sessions.sessions.find((s) => s.sessionId === sessionId);
    expect(mine).toBeDefined();
    const session = await client.session({ sessionId });
    const runIds = session.runs.map((r) => (typeof r === "string" ? r : r.runId));
    expect(runIds).toContain(firstRunId);
    expect(runIds).toHaveLength(2);

    const missing = await client.replay({ runId: "no-such-run" }).catch((e: unknown) => e);
    expect(isRequestError(missing, ErrorCodes.RunNotFound)).toBe(true);
    const invalid = await client.run({ prompt: "" }).catch((e: unknown) => e);
    expect(isRequestError(invalid, ErrorCodes.InvalidParams)).toBe(true);
    const status = await client.status();
    expect(status).toBeTypeOf("object");
  });

  it("lists the first turn's restore point, previews it and restores hello.txt (then undoes that)", async () => {
    const created = eventOf(firstRunId, "checkpoint.created");
    expect(created).toBeDefined();
    expect(store.get(firstRunId)!.checkpoint?.checkpointId).toBe(created!.checkpointId);
    const listed = await client.checkpoints({ sessionId });
    expect(listed.available).toBe(true);
    const point = listed.checkpoints.find((c) => c.checkpointId === created!.checkpointId)!;
    expect(point).toMatchObject({ kind: "turn", turnIndex: 0, runId: firstRunId });
    expect(point.changedFiles.map((f) => f.path.split("/").pop())).toContain("hello.txt");

    const preview = await client.restorePreview({ checkpointId: point.checkpointId });
    const hello = preview.files.find((f) => f.path.endsWith("hello.txt"))!;
    expect(hello).toMatchObject({ action: "modify", oldText: "hello from lovia\n", newText: "old text\n", handChanged: false });
    const restored = await client.restore({ checkpointId: point.checkpointId });
    expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("old text\n");
    await client.restore({ checkpointId: restored.undoCheckpoint!.checkpointId });
    expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("hello from lovia\n");

    const unknown = await client.restore({ checkpointId: "rp-0000000000000000-000000" }).catch((e: unknown) => e);
    expect(isRequestError(unknown, ErrorCodes.CheckpointNotFound)).toBe(true);
  });
});
