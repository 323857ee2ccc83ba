/**
 * A small in-process lovia server speaking the protocol.md shapes over a real
 * `vscode-jsonrpc` connection (in-memory streams). It keeps a per-run event log with
 * `seq` numbers, answers `lovia/replay` from it, and can drop chosen events from the
 * live stream to simulate loss.
 */
import { PassThrough } from "node:stream";
import {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import type {
  ApprovalChoice,
  EventKind,
  EventPayloads,
  FinalStatus,
  LoviaEvent,
  RunStatus,
  SessionSummary,
} from "../../src/protocol/types";

export function connectionPair(): { client: MessageConnection; server: MessageConnection } {
  const up = new PassThrough();
  const down = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(down), new StreamMessageWriter(up));
  const server = createMessageConnection(new StreamMessageReader(up), new StreamMessageWriter(down));
  return { client, server };
}

interface FakeRun {
  runId: string;
  sessionId: string;
  prompt: string;
  status: RunStatus;
  events: LoviaEvent[];
  pendingApprovals: Map<string, { options: ApprovalChoice[] }>;
  steers: Map<string, { message: string; delivered: boolean }>;
  resumable: boolean;
  /** Created by lovia/run and not yet begun (run.started + user.message pending). */
  autoBegin: boolean;
}

export type Handler = (params: any) => unknown; // eslint-disable-line @typescript-eslint/no-explicit-any

export class FakeLoviaServer {
  readonly runs = new Map<string, FakeRun>();
  readonly sessions = new Map<string, { title: string; runIds: string[] }>();
  readonly requests: { method: string; params: any }[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** `${runId}:${seq}` keys not sent live (they stay in the log for replay). */
  readonly drop = new Set<string>();
  /** Per-method overrides. */
  readonly overrides = new Map<string, Handler>();
  initializationOptions: unknown;
  /** Emit run.started/user.message before answering lovia/run (as a fast server may). */
  eventsBeforeRunResponse = false;
  private counter = 0;
  private connections: MessageConnection[] = [];

  /** Attach a new client connection (call again to simulate a reconnect). */
  attach(): MessageConnection {
    const { client, server } = connectionPair();
    this.serve(server);
    server.listen();
    client.listen();
    this.connections.push(server);
    return client;
  }

  /** Send the client a request, as the server does with `lovia/editor/*`. */
  request(method: string, params: unknown): Promise<unknown> {
    const c = this.connections.at(-1);
    if (!c) return Promise.reject(new Error("no client attached"));
    return c.sendRequest(method, params);
  }

  /** Drop every server side connection (the client sees nothing more). */
  detachAll(): void {
    for (const c of this.connections) c.dispose();
    this.connections = [];
  }

  private id(prefix: string): string {
    this.counter += 1;
    return `${prefix}_${this.counter}`;
  }

  emit<K extends EventKind>(runId: string, kind: K, payload: EventPayloads[K]): LoviaEvent {
    const run = this.runs.get(runId);
    if (!run) throw new Error(`fake server: no run ${runId}`);
    // Keep a run's stream well-formed when a test emits before the run has begun.
    if (run.autoBegin) this.begin(run);
    const event = {
      sessionId: run.sessionId,
      runId,
      seq: run.events.length + 1,
      ts: 1_700_000_000_000 + run.events.length * 10,
      kind,
      ...payload,
    } as unknown as LoviaEvent; // a generic spread: TypeScript cannot narrow it to EventOf<K>
    run.events.push(event);
    if (kind === "approval.requested") {
      const p = payload as EventPayloads["approval.requested"];
      run.pendingApprovals.set(p.approvalId, { options: p.options.map((o) => o.decision) });
    }
    if (kind === "run.finished") {
      const p = payload as EventPayloads["run.finished"];
      run.status = p.status;
      run.resumable = p.resumable;
    }
    if (!this.drop.has(`${runId}:${event.seq}`)) {
      for (const c of this.connections) void c.sendNotification("lovia/event", event);
    }
    return event;
  }

  /** Create a run as `lovia/run` would, without a client request. */
  startRun(prompt: string, sessionId?: string): FakeRun {
    const sid = sessionId ?? this.id("ses");
    const runId = this.id("run");
    const session = this.sessions.get(sid) ?? { title: prompt.slice(0, 40), runIds: [] };
    session.runIds.push(runId);
    this.sessions.set(sid, session);
    const run: FakeRun = {
      runId,
      sessionId: sid,
      prompt,
      status: "running",
      events: [],
      pendingApprovals: new Map(),
      steers: new Map(),
      resumable: false,
      autoBegin: false,
    };
    this.runs.set(runId, run);
    return run;
  }

  private begin(run: FakeRun): void {
    if (!run.autoBegin) return;
    run.autoBegin = false;
    this.emit(run.runId, "run.started", { prompt: run.prompt, cwd: "/work/project", model: "scripted", agent: "coder", resumed: false });
    this.emit(run.runId, "user.message", { messageId: this.id("msg"), text: run.prompt, source: "prompt" });
  }

  /** Deliver queued steers (what the server does at a turn start). */
  deliverSteers(runId: string): void {
    const run = this.mustRun(runId);
    for (const [messageId, s] of run.steers) {
      if (s.delivered) continue;
      s.delivered = true;
      this.emit(runId, "user.message", { messageId, text: s.message, source: "steer" });
    }
  }

  finish(runId: string, status: FinalStatus = "completed", resumable = false): void {
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, contextTokens: 10, contextWindow: null };
    this.emit(runId, "run.finished", { status, usage, resumable });
  }

  private mustRun(runId: string): FakeRun {
    const run = this.runs.get(runId);
    if (!run) throw new ResponseError(-32010, `unknown run ${runId}`);
    return run;
  }

  private mustBeLive(run: FakeRun): void {
    if (run.status !== "running") throw new ResponseError(-32011, `run ${run.runId} is not active`);
  }

  private serve(conn: MessageConnection): void {
    const handlers: Record<string, Handler> = {
      initialize: (params) => {
        this.initializationOptions = params?.initializationOptions;
        return {
          capabilities: {
            experimental: { lovia: { protocolVersion: 1, methods: Object.keys(handlers), eventKinds: [], editModes: ["server"], version: "fake" } },
          },
        };
      },
      shutdown: () => null,
      "lovia/run": async (p) => {
        if (typeof p?.prompt !== "string" || !p.prompt) throw new ResponseError(-32602, "prompt must be non-empty", { field: "prompt" });
        if (p.sessionId) {
          for (const r of this.runs.values()) {
            if (r.sessionId === p.sessionId && r.status === "running") {
              throw new ResponseError(-32012, "session has a live run", { activeRunId: r.runId });
            }
          }
        }
        const run = this.startRun(p.prompt, p.sessionId);
        run.autoBegin = true;
        if (this.eventsBeforeRunResponse) this.begin(run);
        else setTimeout(() => this.begin(run), 0);
        return { sessionId: run.sessionId, runId: run.runId, status: "running" };
      },
      "lovia/steer": (p) => {
        const run = this.mustRun(p.runId);
        this.mustBeLive(run);
        const messageId = this.id("steer");
        run.steers.set(messageId, { message: p.message, delivered: false });
        return { runId: run.runId, messageId, accepted: true };
      },
      "lovia/unsteer": (p) => {
        const run = this.mustRun(p.runId);
        const s = run.steers.get(p.messageId);
        if (!s || s.delivered) return { withdrawn: false };
        run.steers.delete(p.messageId);
        return { withdrawn: true };
      },
      "lovia/approve": (p) => {
        const run = this.mustRun(p.runId);
        this.mustBeLive(run);
        const pending = run.pendingApprovals.get(p.approvalId);
        if (!pending) throw new ResponseError(-32013, "approval not found", { outcome: "allowed" });
        run.pendingApprovals.delete(p.approvalId);
        const outcome = String(p.decision).startsWith("allow") ? "allowed" : "rejected";
        setTimeout(() => this.emit(run.runId, "approval.resolved", { approvalId: p.approvalId, outcome, decision: p.decision, by: "user" }), 0);
        return { approvalId: p.approvalId, outcome };
      },
      "lovia/answer": (p) => {
        const run = this.mustRun(p.runId);
        setTimeout(() => this.emit(run.runId, "question.answered", { questionId: p.questionId, answer: p.answer }), 0);
        return { questionId: p.questionId };
      },
      "lovia/cancel": (p) => {
        const run = this.mustRun(p.runId);
        this.mustBeLive(run);
        setTimeout(() => {
          for (const id of run.pendingApprovals.keys()) {
            this.emit(run.runId, "approval.resolved", { approvalId: id, outcome: "cancelled", by: "user" });
          }
          run.pendingApprovals.clear();
          this.finish(run.runId, "cancelled");
        }, 0);
        return { runId: run.runId, status: "cancelling" };
      },
      "lovia/resume": (p) => {
        const run = this.mustRun(p.runId);
        if (!run.resumable) throw new ResponseError(-32014, "nothing to resume");
        run.status = "running";
        run.resumable = false;
        setTimeout(() => this.emit(run.runId, "run.started", { prompt: run.prompt, cwd: "/work/project", model: "scripted", agent: "coder", resumed: true }), 0);
        return { sessionId: run.sessionId, runId: run.runId, status: "running" };
      },
      "lovia/replay": (p) => {
        const run = this.mustRun(p.runId);
        const after = typeof p.afterSeq === "number" ? p.afterSeq : 0;
        return { events: run.events.filter((e) => e.seq > after), lastSeq: run.events.length, status: run.status };
      },
      "lovia/sessions": () => {
        const sessions: SessionSummary[] = [...this.sessions].map(([sessionId, s]) => {
          const last = this.runs.get(s.runIds[s.runIds.length - 1]!);
          return {
            sessionId,
            title: s.title,
            updatedAt: 1_700_000_000_000,
            lastRunId: last?.runId ?? null,
            lastRunStatus: last?.status ?? null,
            resumable: last?.resumable ?? false,
            children: [],
          };
        });
        return { sessions };
      },
      "lovia/session": (p) => {
        const s = this.sessions.get(p.sessionId);
        if (!s) throw new ResponseError(-32010, "unknown session");
        return { sessionId: p.sessionId, title: s.title, entries: [], runs: s.runIds.map((runId) => ({ runId, status: this.runs.get(runId)?.status })) };
      },
      "lovia/deleteSession": (p) => {
        const s = this.sessions.get(p.sessionId);
        if (!s) throw new ResponseError(-32010, "unknown session");
        if (s.runIds.some((id) => this.runs.get(id)?.status === "running")) return { deleted: false };
        this.sessions.delete(p.sessionId);
        return { deleted: true };
      },
      "lovia/status": () => ({ version: "fake", model: "scripted", liveRuns: [...this.runs.values()].filter((r) => r.status === "running").map((r) => r.runId) }),
    };
    conn.onRequest((method: string, params: unknown) => {
      this.requests.push({ method, params });
      const handler = this.overrides.get(method) ?? handlers[method];
      if (!handler) throw new ResponseError(-32601, `unhandled method ${method}`);
      return handler(params);
    });
    conn.onNotification(() => undefined);
  }

  requestsOf(method: string): any[] { // eslint-disable-line @typescript-eslint/no-explicit-any
    return this.requests.filter((r) => r.method === method).map((r) => r.params);
  }
}

/** Wait until `predicate` holds (polling), or fail after `timeoutMs`. */
export async function waitFor(predicate: () => boolean, timeoutMs = 2000, what = "condition"): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
