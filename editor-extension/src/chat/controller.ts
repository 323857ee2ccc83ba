import type { LoviaClient } from "../protocol/client";
import { isRequestError, LoviaRequestError, type Disposable } from "../protocol/client";
import type { EventStore } from "../protocol/eventStore";
import type { RunView } from "../protocol/runView";
import {
  APPROVAL_DECISIONS,
  ErrorCodes,
  type ApproveParams,
  type ContextRef,
  type EditedFile,
  type RestoreFilesResult,
  type SandboxStatus,
  type SessionSummary,
} from "../protocol/types";
import { childRunsOf, unloadedChildren } from "./children";
import { instructionLink } from "./instructionLinks";
import { runChanges } from "./rows";
import type { ChatError, ChatViewState, InstructionLink, Mention, ModelChoice, ModelView, PendingSteer, ServerState, WebviewIntent } from "./messages";

/** Where the panel was: the open session and how far it was scrolled (kept across reloads). */
export interface PanelPlace {
  sessionId?: string;
  scrollTop?: number;
  atBottom?: boolean;
}

/** Side effects the controller asks of its host (VS Code in the extension, fakes in tests). */
export interface ChatHost {
  openLocation(uri: string, line?: number): void | Promise<void>;
  openDiff(runId: string, approvalId: string): void | Promise<void>;
  /** A send's mentions as the run's context (Problems filled in with the diagnostics of now). */
  resolveMentions(mentions: Mention[]): ContextRef[];
  /** The proposal of a pending approval as the user edited it in the diff editor (none: []). */
  proposalEdits(approvalId: string): EditedFile[];
  /** Put text on the clipboard. */
  copy(text: string): void | Promise<void>;
  /** Insert code at the cursor of the active editor (a new editor when there is none). */
  insertCode(text: string, language: string): void | Promise<void>;
  /** Show what a run did to one file: its text before the run against the file now. */
  openChange(change: { runId: string; path: string; uri: string; before: string | null }): void | Promise<void>;
  setApiKey(): void | Promise<void>;
  /** Default working directory for new runs (first workspace folder). */
  defaultCwd(): string | undefined;
  isTrusted(): boolean;
  /** The model picker (a quick pick in VS Code); undefined when dismissed. */
  chooseModel(): Promise<ModelChoice | undefined>;
  /** Persistence across window reloads (workspaceState in VS Code). */
  loadPlace(): PanelPlace;
  savePlace(place: PanelPlace): void;
  loadModel(): ModelChoice;
  saveModel(choice: ModelChoice): void;
  /** Preview a restore point, ask, restore; the server's result, undefined when cancelled. */
  restoreCheckpoint(checkpointId: string): Promise<RestoreFilesResult | undefined>;
  /** Show what changed in the files since a restore point. */
  compareCheckpoint(checkpointId: string): Promise<void>;
  /** A worktree run started from the panel (the Agents view shows it). */
  worktreeRunStarted?(runId: string): void;
  /** Notices the user dismissed, by text (globalState in VS Code: once per machine). */
  noticeDismissed?(text: string): boolean;
  dismissNotice?(text: string): void;
}

export type StateListener = (state: ChatViewState) => void;

/**
 * Holds the chat's state (which session is shown, pending steers, errors) next to the
 * event store and turns user intents into protocol requests. Free of `vscode`.
 */
export class ChatController implements Disposable {
  private sessionId: string | undefined;
  private sessionTitle: string | undefined;
  /** Run ids of the active session, in order. */
  private runOrder: string[] = [];
  private sessions: SessionSummary[] = [];
  private pendingSteers: PendingSteer[] = [];
  private error: ChatError | undefined;
  private busy = 0;
  private server: { state: ServerState; detail?: string } = { state: "starting" };
  private modelChoice: ModelChoice;
  /** The server's configured model (`lovia/status`); null when none, undefined until asked. */
  private serverModel: string | null | undefined;
  /** Why commands are not sandboxed here, while the user has not dismissed it. */
  private sandboxNotice: string | undefined;
  private instructions: InstructionLink[] = [];
  private readonly seenLive = new Set<string>();
  private place: PanelPlace;
  private restored = false;
  private draft: { id: number; text: string } | undefined;
  private readonly listeners = new Set<StateListener>();
  private readonly subscriptions: Disposable[] = [];

  constructor(
    private readonly client: LoviaClient,
    private readonly store: EventStore,
    private readonly host: ChatHost,
  ) {
    this.modelChoice = host.loadModel();
    this.place = host.loadPlace();
    this.subscriptions.push(
      store.onDidChange((runId) => {
        const run = store.get(runId);
        if (run && run.sessionId === this.sessionId && !this.runOrder.includes(runId)) this.runOrder.push(runId);
        if (run && (this.runOrder.includes(runId) || run.parentRunId !== undefined)) this.loadChildren(run);
        if (run) this.noteRunState(run);
        this.settleSteers();
        this.changed();
      }),
    );
  }

  /** A run seen live that ended may have written an instruction file (`/init`): list them again. */
  private noteRunState(run: RunView): void {
    if (run.status === "running") this.seenLive.add(run.runId);
    else if (this.seenLive.delete(run.runId)) void this.refreshInstructions();
  }

  private async refreshInstructions(): Promise<void> {
    try {
      const status = await this.client.status();
      this.instructions = (status.instructions ?? []).map(instructionLink);
      this.changed();
    } catch {
      // the server went away: the line stays as it was
    }
  }

  /** Start following subagents the store has not seen (their events come on their own). */
  private loadChildren(run: RunView): void {
    for (const child of unloadedChildren([run], (id) => this.store.has(id))) {
      void this.store.load(child.runId, child.sessionId).catch(() => undefined);
    }
  }

  onDidChange(listener: StateListener): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  get activeSessionId(): string | undefined {
    return this.sessionId;
  }

  /** The live run of the shown session. */
  liveRun(): RunView | undefined {
    for (let i = this.runOrder.length - 1; i >= 0; i--) {
      const run = this.store.get(this.runOrder[i]!);
      if (run && run.status === "running") return run;
    }
    return undefined;
  }

  state(): ChatViewState {
    const runs = this.runOrder.map((id) => this.store.get(id)).filter((r): r is RunView => r !== undefined);
    const live = this.liveRun();
    const state: ChatViewState = {
      server: { ...this.server },
      trusted: this.host.isTrusted(),
      sessions: this.sessions,
      runs,
      childRuns: childRunsOf(runs, (id) => this.store.get(id)),
      pendingSteers: this.pendingSteers.map((s) => ({ ...s })),
      busy: this.busy > 0,
      model: this.modelView(),
    };
    if (this.place.sessionId !== undefined && this.place.sessionId === this.sessionId) {
      if (this.place.scrollTop !== undefined) state.scrollTop = this.place.scrollTop;
      if (this.place.atBottom !== undefined) state.atBottom = this.place.atBottom;
    }
    if (this.sessionId !== undefined) state.sessionId = this.sessionId;
    const title = this.sessionTitle ?? runs[0]?.prompt;
    if (title !== undefined) state.sessionTitle = title;
    if (live) state.liveRunId = live.runId;
    if (this.error) state.error = { ...this.error };
    if (this.draft) state.draft = { ...this.draft };
    if (this.sandboxNotice) state.sandboxNotice = this.sandboxNotice;
    if (this.instructions.length > 0) state.instructions = this.instructions.map((i) => ({ ...i }));
    return state;
  }

  setServerState(state: ServerState, detail?: string): void {
    this.server = detail === undefined ? { state } : { state, detail };
    this.changed();
  }

  private modelView(): ModelView {
    if (this.modelChoice.kind === "demo") return { kind: "demo", label: "Offline demo" };
    if (this.modelChoice.kind === "model") return { kind: "model", label: this.modelChoice.model };
    if (this.serverModel) return { kind: "setting", label: this.serverModel };
    return { kind: "none", label: this.serverModel === null ? "No model" : "Model…" };
  }

  /** Use this model (or the demo) for the next runs; remembered for the workspace. */
  setModel(choice: ModelChoice): void {
    this.modelChoice = choice;
    this.host.saveModel(choice);
    this.error = undefined;
    this.changed();
  }

  async chooseModel(): Promise<void> {
    const choice = await this.host.chooseModel();
    if (choice) this.setModel(choice);
  }

  /**
   * The server is up: learn its configured model, and reopen the session the panel showed
   * before a reload (its live run reattaches through replay).
   */
  async serverReady(): Promise<void> {
    try {
      const status = await this.client.status();
      this.serverModel = typeof status.model === "string" && status.model ? status.model : null;
      this.sandboxNotice = this.noticeFor(status.sandbox);
      this.instructions = (status.instructions ?? []).map(instructionLink);
    } catch {
      this.serverModel = null;
    }
    this.changed();
    if (!this.restored) {
      this.restored = true;
      const last = this.place.sessionId;
      if (last && this.sessionId === undefined) await this.reopen(last);
    }
  }

  /** Say once that commands run unconfined (or refuse to run): not when the user turned the
   * sandbox off, and not again once dismissed. */
  private noticeFor(sandbox: SandboxStatus | undefined): string | undefined {
    if (!sandbox || sandbox.enabled || sandbox.setting === "off" || !sandbox.reason) return undefined;
    return this.host.noticeDismissed?.(sandbox.reason) ? undefined : sandbox.reason;
  }

  private async reopen(sessionId: string): Promise<void> {
    try {
      await this.loadSession(sessionId);
    } catch {
      // The session is gone (deleted, another state dir): start fresh, quietly.
      this.remember({});
      this.changed();
    }
  }

  private remember(place: PanelPlace): void {
    this.place = place;
    this.host.savePlace(place);
  }

  /** Dispatch one intent from the webview. Errors are shown in the panel, never thrown. */
  async handle(intent: WebviewIntent): Promise<void> {
    switch (intent.type) {
      case "ready":
        this.changed();
        await this.refreshSessions();
        return;
      case "send":
        await this.send(intent.text, intent.mode, intent.context ? this.host.resolveMentions(intent.context) : undefined);
        return;
      case "mentionQuery":
      case "commandQuery":
        return; // answered by the chat view, which owns the webview
      case "newWorktreeAgent":
        await this.startWorktreeRun(intent.text, intent.context ? this.host.resolveMentions(intent.context) : undefined);
        return;
      case "unsteer":
        await this.unsteer(intent.runId, intent.messageId);
        return;
      case "cancel":
        await this.cancel(intent.runId);
        return;
      case "steerRun":
        if (intent.text.trim()) await this.steer(intent.runId, intent.text.trim());
        return;
      case "approve": {
        const { type: _, ...params } = intent;
        await this.approve(params);
        return;
      }
      case "openDiff":
        await this.host.openDiff(intent.runId, intent.approvalId);
        return;
      case "copy":
        await this.host.copy(intent.text);
        return;
      case "insertCode":
        await this.host.insertCode(intent.text, intent.language);
        return;
      case "openChange": {
        const run = this.store.get(intent.runId);
        const file = run ? runChanges(run).find((f) => f.path === intent.path) : undefined;
        if (file) await this.host.openChange({ runId: intent.runId, path: file.path, uri: file.uri, before: file.oldText });
        return;
      }
      case "answer":
        await this.answer(intent.runId, intent.questionId, intent.answer);
        return;
      case "openLocation":
        await this.host.openLocation(intent.uri, intent.line);
        return;
      case "selectSession":
        await this.openSession(intent.sessionId);
        return;
      case "newSession":
        this.newSession();
        return;
      case "resume":
        await this.resume(intent.runId);
        return;
      case "refreshSessions":
        await this.refreshSessions();
        return;
      case "deleteSession":
        await this.deleteSession(intent.sessionId);
        return;
      case "dismissError":
        this.error = undefined;
        this.changed();
        return;
      case "dismissSandboxNotice":
        if (this.sandboxNotice) this.host.dismissNotice?.(this.sandboxNotice);
        this.sandboxNotice = undefined;
        this.changed();
        return;
      case "setApiKey":
        await this.host.setApiKey();
        return;
      case "chooseModel":
        await this.chooseModel();
        return;
      case "useDemo":
        this.setModel({ kind: "demo" });
        return;
      case "scrolled":
        if (this.sessionId !== undefined) this.remember({ sessionId: this.sessionId, scrollTop: intent.top, atBottom: intent.atBottom });
        return;
      case "restoreCheckpoint":
        await this.restoreCheckpoint(intent.checkpointId);
        return;
      case "compareCheckpoint":
        try {
          await this.host.compareCheckpoint(intent.checkpointId);
        } catch (err) {
          this.showError(err);
        }
        return;
      default: {
        // An intent added to messages.schema.json must be handled above: this fails to compile otherwise.
        const unhandled: never = intent;
        return unhandled;
      }
    }
  }

  /**
   * "Restore to here": the host previews and asks; when the conversation was cut too, the
   * removed runs leave the panel and the cut turn's prompt comes back into the composer.
   */
  async restoreCheckpoint(checkpointId: string): Promise<RestoreFilesResult | undefined> {
    if (this.liveRun()) {
      this.error = { text: "Stop the running agent before restoring: the restore would change files under it." };
      this.changed();
      return undefined;
    }
    this.error = undefined;
    let result: RestoreFilesResult | undefined;
    try {
      result = await this.host.restoreCheckpoint(checkpointId);
    } catch (err) {
      this.showError(err);
      return undefined;
    }
    if (result && result.removedRuns.length > 0) {
      const removed = new Set(result.removedRuns);
      this.store.forget((r) => removed.has(r.runId));
      this.runOrder = this.runOrder.filter((id) => !removed.has(id));
      if (result.prompt) this.draft = { id: Date.now(), text: result.prompt };
      this.changed();
      void this.refreshSessions();
    }
    return result;
  }

  /** Send text: a new prompt, or a steer when the shown session has a live run. */
  async send(text: string, _mode: "prompt" | "steer" = "prompt", context?: ContextRef[]): Promise<void> {
    const message = text.trim();
    if (!message) return;
    const live = this.liveRun();
    if (live) {
      // While a run is live the composer is a steer box, whatever mode the view thought it was in.
      await this.steer(live.runId, message);
      return;
    }
    // No live run (for a steer: it ended between typing and sending): start a new run
    // in the same session.
    await this.startRun(message, context);
  }

  /** `lovia/run`'s params for a prompt with the panel's model choice and folder. */
  private runParams(prompt: string, context?: ContextRef[]): Parameters<LoviaClient["run"]>[0] {
    const params: Parameters<LoviaClient["run"]>[0] = { prompt };
    if (this.modelChoice.kind === "demo") params.agent = "lovia:demo";
    else if (this.modelChoice.kind === "model") params.model = this.modelChoice.model;
    const cwd = this.host.defaultCwd();
    if (cwd !== undefined) params.cwd = cwd;
    if (context && context.length > 0) params.context = context;
    return params;
  }

  /**
   * A new agent in a git worktree of its own (a session of its own too): the panel stays on
   * the shown conversation, the Agents view lists the new run.
   */
  async startWorktreeRun(prompt: string, context?: ContextRef[]): Promise<string | undefined> {
    const text = prompt.trim();
    if (!text) return undefined;
    return this.guard(async () => {
      const result = await this.client.run({ ...this.runParams(text, context), isolation: "worktree" });
      this.host.worktreeRunStarted?.(result.runId);
      // A queued run has no events yet (the store learns of it when it starts).
      if (result.status === "running") {
        this.store.track(result.runId, result.sessionId);
        await this.store.catchUp(result.runId);
      }
      return result.runId;
    });
  }

  async startRun(prompt: string, context?: ContextRef[]): Promise<string | undefined> {
    return this.guard(async () => {
      const params = this.runParams(prompt, context);
      if (this.sessionId !== undefined) params.sessionId = this.sessionId;
      const result = await this.client.run(params);
      if (this.sessionId !== result.sessionId) {
        this.sessionId = result.sessionId;
        this.sessionTitle = undefined;
        this.runOrder = [];
        this.remember({ sessionId: result.sessionId, atBottom: true });
      }
      this.store.track(result.runId, result.sessionId);
      if (!this.runOrder.includes(result.runId)) this.runOrder.push(result.runId);
      this.changed();
      // Events emitted before we subscribed (or before the response) are fetched now.
      await this.store.catchUp(result.runId);
      void this.refreshSessions();
      return result.runId;
    });
  }

  async steer(runId: string, message: string): Promise<void> {
    await this.guard(async () => {
      const result = await this.client.steer({ runId, message });
      const run = this.store.get(runId);
      const delivered = run?.items.some((i) => i.type === "user" && i.id === result.messageId) ?? false;
      if (!delivered) this.pendingSteers.push({ runId, messageId: result.messageId, text: message });
      this.changed();
    });
  }

  async unsteer(runId: string, messageId: string): Promise<void> {
    const steer = this.pendingSteers.find((s) => s.runId === runId && s.messageId === messageId);
    if (steer) steer.withdrawing = true;
    this.changed();
    await this.guard(async () => {
      try {
        const result = await this.client.unsteer({ runId, messageId });
        if (result.withdrawn) this.dropSteer(messageId);
        else if (steer) steer.withdrawing = false;
      } catch (err) {
        if (steer) steer.withdrawing = false;
        // The run ended: nothing left to withdraw.
        if (isRequestError(err, ErrorCodes.RunNotActive)) this.dropSteer(messageId);
        else throw err;
      }
    });
  }

  async cancel(runId?: string): Promise<void> {
    const id = runId ?? this.liveRun()?.runId;
    if (!id) return;
    await this.guard(async () => {
      try {
        await this.client.cancel({ runId: id });
      } catch (err) {
        if (!isRequestError(err, ErrorCodes.RunNotActive)) throw err;
      }
    });
  }

  /** `lovia/approve` with the card's or the diff editor's params, sent as one object. */
  async approve(answer: ApproveParams): Promise<boolean> {
    const { runId, approvalId, decision, message, edits } = answer;
    if (!APPROVAL_DECISIONS.includes(decision)) return false;
    const ok = await this.guard(async () => {
      // Accepted from the card: what the user changed in the diff editor is not lost.
      const approved = edits && edits.length > 0 ? edits : this.host.proposalEdits(approvalId);
      const params: ApproveParams = { runId, approvalId, decision, message, edits: approved };
      try {
        await this.client.approve(params);
      } catch (err) {
        // Already decided elsewhere (another client, a timeout): the resolved event will tell.
        if (isRequestError(err, ErrorCodes.ApprovalNotFound) || isRequestError(err, ErrorCodes.RunNotActive)) {
          await this.store.catchUp(runId);
          return true;
        }
        throw err;
      }
      return true;
    });
    return ok === true;
  }

  async answer(runId: string, questionId: string, answer: string): Promise<void> {
    if (!answer.trim()) return;
    await this.guard(() => this.client.answer({ runId, questionId, answer }));
  }

  async resume(runId: string): Promise<void> {
    await this.guard(async () => {
      const result = await this.client.resume({ runId });
      if (this.sessionId !== result.sessionId) await this.openSession(result.sessionId);
      this.store.track(result.runId, result.sessionId);
      if (!this.runOrder.includes(result.runId)) this.runOrder.push(result.runId);
      await this.store.catchUp(result.runId);
      this.changed();
      void this.refreshSessions();
    });
  }

  newSession(): void {
    this.remember({});
    this.sessionId = undefined;
    this.sessionTitle = undefined;
    this.runOrder = [];
    this.pendingSteers = [];
    this.error = undefined;
    this.changed();
  }

  async openSession(sessionId: string): Promise<void> {
    await this.guard(() => this.loadSession(sessionId));
  }

  private async loadSession(sessionId: string): Promise<void> {
    {
      const session = await this.client.session({ sessionId });
      if (this.place.sessionId !== session.sessionId) this.remember({ sessionId: session.sessionId, atBottom: true });
      this.sessionId = session.sessionId;
      this.sessionTitle = session.title || undefined;
      const ids = session.runs.map((r) => r.runId);
      this.runOrder = ids;
      this.pendingSteers = [];
      this.changed();
      for (const id of ids) {
        if (this.store.has(id)) await this.store.catchUp(id);
        else await this.store.load(id, session.sessionId);
      }
      this.changed();
    }
  }

  async refreshSessions(): Promise<void> {
    if (this.server.state !== "running") return;
    try {
      const result = await this.client.sessions({ limit: 50 });
      this.sessions = result.sessions ?? [];
      this.changed();
    } catch (err) {
      this.showError(err);
    }
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.guard(async () => {
      const result = await this.client.deleteSession({ sessionId });
      if (result.deleted) {
        this.store.forget((r) => r.sessionId === sessionId);
        if (this.sessionId === sessionId) this.newSession();
      }
      await this.refreshSessions();
    });
  }

  /** After a reconnect: bring the shown runs up to date and refresh the list. */
  async resync(): Promise<void> {
    await this.store.resync();
    for (const id of this.runOrder) if (!this.store.has(id)) await this.store.load(id, this.sessionId ?? "");
    await this.refreshSessions();
    this.changed();
  }

  showError(err: unknown): void {
    if (err instanceof LoviaRequestError) {
      this.error = { text: err.message, code: err.code };
      if (err.hint !== undefined) this.error.hint = err.hint;
    } else {
      this.error = { text: err instanceof Error ? err.message : String(err) };
    }
    this.changed();
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.listeners.clear();
  }

  // -------------------------------------------------------------------------

  private async guard<T>(fn: () => Promise<T>): Promise<T | undefined> {
    this.busy += 1;
    this.error = undefined;
    this.changed();
    try {
      return await fn();
    } catch (err) {
      this.showError(err);
      return undefined;
    } finally {
      this.busy -= 1;
      this.changed();
    }
  }

  private dropSteer(messageId: string): void {
    this.pendingSteers = this.pendingSteers.filter((s) => s.messageId !== messageId);
  }

  /** Steers disappear once delivered (echoed as user.message) or once their run ended. */
  private settleSteers(): void {
    this.pendingSteers = this.pendingSteers.filter((s) => {
      const run = this.store.get(s.runId);
      if (!run) return false;
      if (run.status !== "running") return false;
      return !run.items.some((i) => i.type === "user" && i.id === s.messageId);
    });
  }

  private changed(): void {
    const state = this.state();
    for (const l of [...this.listeners]) l(state);
  }
}
