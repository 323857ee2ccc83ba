import { applyEvent, applyReplayStatus, createRunView, type RunView } from "./runView";
import type { LoviaEvent, ReplayParams, ReplayResult, RunStatus } from "./types";
import type { Disposable } from "./client";

/** Where the store fetches missed events: `LoviaClient` implements it. */
export interface ReplaySource {
  replay(params: ReplayParams): Promise<ReplayResult>;
}

export interface EventStoreOptions {
  /** Called when a catch-up fails (the store keeps going with what it has). */
  onError?: (runId: string, error: unknown) => void;
  /** Bound on catch-up rounds for one gap (a server that keeps skipping seqs). */
  maxCatchUpRounds?: number;
}

interface RunRecord {
  view: RunView;
  /** Events that arrived ahead of a gap, by seq. */
  ahead: Map<number, LoviaEvent>;
  catchUp: Promise<void> | undefined;
  /** Set when a gap could not be filled from the server. */
  gapUnrecoverable: boolean;
}

export type ChangeListener = (runId: string) => void;

/**
 * Folds `lovia/event` notifications into per-run views, in `seq` order:
 * duplicates (seq ≤ last applied) are dropped, events ahead of a gap are held back
 * while the store catches up with `lovia/replay {runId, afterSeq}`.
 * The store is the extension's source of truth; views are rebuilt from the server with
 * {@link rebuild} (e.g. after a reconnect) and brought up to date with {@link catchUp}.
 */
export class EventStore implements Disposable {
  private readonly runs = new Map<string, RunRecord>();
  private readonly listeners = new Set<ChangeListener>();
  private readonly maxRounds: number;
  /** Counters, for diagnostics and tests. */
  readonly stats = { applied: 0, duplicates: 0, gaps: 0, replays: 0 };

  constructor(
    private readonly source: ReplaySource,
    private readonly options: EventStoreOptions = {},
  ) {
    this.maxRounds = options.maxCatchUpRounds ?? 5;
  }

  onDidChange(listener: ChangeListener): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  get(runId: string): RunView | undefined {
    return this.runs.get(runId)?.view;
  }

  has(runId: string): boolean {
    return this.runs.has(runId);
  }

  /** All runs, in the order the store first saw them. */
  all(): RunView[] {
    return [...this.runs.values()].map((r) => r.view);
  }

  runsOfSession(sessionId: string): RunView[] {
    return this.all().filter((r) => r.sessionId === sessionId);
  }

  liveRuns(): RunView[] {
    return this.all().filter((r) => r.status === "running");
  }

  /** Make sure a run is tracked (e.g. right after `lovia/run` answered). */
  track(runId: string, sessionId: string): RunView {
    return this.record(runId, sessionId).view;
  }

  /**
   * Feed one live notification. Returns true when it was applied now; a duplicate or an
   * event held back behind a gap returns false (the held-back event is applied once the
   * gap is filled).
   */
  ingest(event: LoviaEvent): boolean {
    const rec = this.record(event.runId, event.sessionId);
    const expected = rec.view.lastSeq + 1;
    if (event.seq < expected || rec.ahead.has(event.seq)) {
      this.stats.duplicates += 1;
      return false;
    }
    if (event.seq > expected) {
      rec.ahead.set(event.seq, event);
      if (rec.gapUnrecoverable) {
        this.drain(rec, true);
      } else {
        this.stats.gaps += 1;
        void this.catchUp(event.runId);
      }
      return false;
    }
    this.applyInOrder(rec, event);
    this.drain(rec, false);
    this.emit(event.runId);
    return true;
  }

  /**
   * Fetch and apply everything after the last applied seq. Single-flight per run:
   * concurrent callers share one request.
   */
  catchUp(runId: string): Promise<void> {
    const rec = this.runs.get(runId);
    if (!rec) return this.load(runId);
    if (rec.catchUp) return rec.catchUp;
    const job = this.runCatchUp(rec).finally(() => {
      rec.catchUp = undefined;
    });
    rec.catchUp = job;
    return job;
  }

  /** Start tracking a run the client has not seen (a resumed session) from its first event. */
  async load(runId: string, sessionId = ""): Promise<void> {
    if (!this.runs.has(runId)) this.record(runId, sessionId);
    await this.catchUp(runId);
  }

  /** Drop what we have for a run and fold it again from the server's log. */
  async rebuild(runId: string): Promise<void> {
    const old = this.runs.get(runId);
    if (old?.catchUp) await old.catchUp.catch(() => undefined);
    const sessionId = old?.view.sessionId ?? "";
    this.runs.delete(runId);
    this.record(runId, sessionId);
    await this.catchUp(runId);
  }

  /**
   * After a reconnect (server restart, new connection): catch up every run the store
   * still believes is live. Runs the server no longer runs get their stored status.
   */
  async resync(): Promise<void> {
    await Promise.all(this.liveRuns().map((r) => this.catchUp(r.runId)));
  }

  /** Forget runs (e.g. a deleted session). */
  forget(predicate: (run: RunView) => boolean): void {
    for (const [id, rec] of this.runs) if (predicate(rec.view)) this.runs.delete(id);
  }

  dispose(): void {
    this.listeners.clear();
    this.runs.clear();
  }

  // -------------------------------------------------------------------------

  private record(runId: string, sessionId: string): RunRecord {
    let rec = this.runs.get(runId);
    if (!rec) {
      rec = { view: createRunView(runId, sessionId), ahead: new Map(), catchUp: undefined, gapUnrecoverable: false };
      this.runs.set(runId, rec);
    } else if (!rec.view.sessionId && sessionId) {
      rec.view.sessionId = sessionId;
    }
    return rec;
  }

  private applyInOrder(rec: RunRecord, event: LoviaEvent): void {
    if (!rec.view.sessionId) rec.view.sessionId = event.sessionId;
    applyEvent(rec.view, event);
    this.stats.applied += 1;
  }

  /** Apply held-back events that are now contiguous (or all of them, when forced). */
  private drain(rec: RunRecord, force: boolean): void {
    let changed = false;
    for (;;) {
      const next = rec.ahead.get(rec.view.lastSeq + 1);
      if (next) {
        rec.ahead.delete(next.seq);
        this.applyInOrder(rec, next);
        changed = true;
        continue;
      }
      if (force && rec.ahead.size > 0) {
        const lowest = Math.min(...rec.ahead.keys());
        const ev = rec.ahead.get(lowest)!;
        rec.ahead.delete(lowest);
        this.applyInOrder(rec, ev);
        changed = true;
        continue;
      }
      break;
    }
    // Held-back events now at or below lastSeq are duplicates.
    for (const seq of [...rec.ahead.keys()]) if (seq <= rec.view.lastSeq) rec.ahead.delete(seq);
    if (changed) this.emit(rec.view.runId);
  }

  private async runCatchUp(rec: RunRecord): Promise<void> {
    const runId = rec.view.runId;
    for (let round = 0; round < this.maxRounds; round++) {
      const afterSeq = rec.view.lastSeq;
      let result: ReplayResult;
      try {
        this.stats.replays += 1;
        result = await this.source.replay({ runId, afterSeq });
      } catch (err) {
        rec.gapUnrecoverable = rec.ahead.size > 0;
        this.drain(rec, true);
        this.options.onError?.(runId, err);
        return;
      }
      // The store may have been rebuilt/forgotten while we waited.
      if (this.runs.get(runId) !== rec) return;
      let changed = false;
      for (const ev of [...result.events].sort((a, b) => a.seq - b.seq)) {
        if (ev.seq === rec.view.lastSeq + 1) {
          this.applyInOrder(rec, ev);
          changed = true;
        } else if (ev.seq <= rec.view.lastSeq) {
          this.stats.duplicates += 1;
        } else {
          rec.ahead.set(ev.seq, ev);
        }
      }
      this.drain(rec, false);
      const status: RunStatus = result.status;
      if (rec.ahead.size === 0 && rec.view.lastSeq >= result.lastSeq) {
        if (status !== "running") {
          applyReplayStatus(rec.view, status);
          changed = true;
        }
        if (changed) this.emit(runId);
        return;
      }
      if (changed) this.emit(runId);
      // Still a hole (the server's log moved on while we asked): go round again.
      if (result.events.length === 0 && rec.ahead.size === 0) return;
    }
    // Give up on a hole that replay does not fill: show what we have.
    rec.gapUnrecoverable = true;
    this.drain(rec, true);
  }

  private emit(runId: string): void {
    for (const l of [...this.listeners]) l(runId);
  }
}
