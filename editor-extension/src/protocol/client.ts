import {
  EVENT_NOTIFICATION,
  ErrorCodes,
  isLoviaEvent,
  Methods,
  type AnswerParams,
  type ApprovalChoice,
  type ApproveParams,
  type CancelParams,
  type CheckpointParams,
  type CommandsParams,
  type DeleteSessionParams,
  type ErrorCodeName,
  type LoviaEvent,
  type ReplayParams,
  type RestoreParams,
  type RequestMap,
  type ResumeParams,
  type RunParams,
  type SessionParams,
  type SessionsParams,
  type SteerParams,
  type UnsteerParams,
  type WorktreeApplyParams,
  type WorktreeListParams,
  type WorktreeRunParams,
} from "./types";

/** Whether the decision lets the call run (an allow, once or always). */
export function allows(decision: ApprovalChoice): boolean {
  return decision === "allow_once" || decision === "allow_always";
}

/**
 * `lovia/approve`'s params under the protocol's one rule, kept here, where every approval is
 * sent (the card, the diff editor and the modal pass on what the user gave): a message only
 * with a rejection, trimmed and never empty; edits only with an allow, and only when there are
 * some.
 */
export function approvalParams({ runId, approvalId, decision, message, edits }: ApproveParams): ApproveParams {
  const params: ApproveParams = { runId, approvalId, decision };
  const reason = message?.trim();
  if (reason && !allows(decision)) params.message = reason;
  if (edits && edits.length > 0 && allows(decision)) params.edits = edits;
  return params;
}

export interface Disposable {
  dispose(): void;
}

/**
 * The minimal JSON-RPC surface the client needs. A `vscode-jsonrpc` `MessageConnection`
 * and a `vscode-languageclient` `LanguageClient` both satisfy it.
 */
export interface RpcEndpoint {
  sendRequest(method: string, params: unknown): Promise<unknown>;
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
}

const CODE_NAMES = new Map<number, ErrorCodeName>(
  (Object.entries(ErrorCodes) as [ErrorCodeName, number][]).map(([name, code]) => [code, name]),
);

/** A JSON-RPC error answered by the server, with the protocol's name for its code. */
export class LoviaRequestError extends Error {
  readonly code: number;
  readonly codeName: ErrorCodeName | undefined;
  readonly data: unknown;
  readonly method: string;

  constructor(method: string, code: number, message: string, data: unknown) {
    super(message);
    this.name = "LoviaRequestError";
    this.method = method;
    this.code = code;
    this.codeName = CODE_NAMES.get(code);
    this.data = data;
  }

  /** `data.hint` (ModelNotConfigured and friends), if the server sent one. */
  get hint(): string | undefined {
    const d = this.data;
    if (typeof d === "object" && d !== null && typeof (d as { hint?: unknown }).hint === "string") {
      return (d as { hint: string }).hint;
    }
    return undefined;
  }
}

export function isRequestError(err: unknown, code?: number): err is LoviaRequestError {
  return err instanceof LoviaRequestError && (code === undefined || err.code === code);
}

function toRequestError(method: string, err: unknown): unknown {
  if (typeof err === "object" && err !== null) {
    const e = err as { code?: unknown; message?: unknown; data?: unknown };
    if (typeof e.code === "number") {
      return new LoviaRequestError(method, e.code, typeof e.message === "string" ? e.message : String(err), e.data);
    }
  }
  return err;
}

export type EventListener = (event: LoviaEvent) => void;

/** Typed client for the `lovia/*` methods over any {@link RpcEndpoint}. */
export class LoviaClient implements Disposable {
  private readonly listeners = new Set<EventListener>();
  private readonly subscription: Disposable;
  /** Notifications that did not look like events (kept for diagnostics). */
  malformedEvents = 0;

  constructor(private readonly endpoint: RpcEndpoint) {
    this.subscription = endpoint.onNotification(EVENT_NOTIFICATION, (params) => this.deliver(params));
  }

  private deliver(params: unknown): void {
    if (!isLoviaEvent(params)) {
      this.malformedEvents += 1;
      return;
    }
    for (const listener of [...this.listeners]) listener(params);
  }

  onEvent(listener: EventListener): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  async request<M extends keyof RequestMap>(method: M, params: RequestMap[M][0]): Promise<RequestMap[M][1]> {
    try {
      return (await this.endpoint.sendRequest(method, params)) as RequestMap[M][1];
    } catch (err) {
      throw toRequestError(method, err);
    }
  }

  run(params: RunParams) {
    return this.request(Methods.run, params);
  }
  steer(params: SteerParams) {
    return this.request(Methods.steer, params);
  }
  unsteer(params: UnsteerParams) {
    return this.request(Methods.unsteer, params);
  }
  /** Sent as {@link approvalParams} makes them: what the user gave, under the protocol's rule. */
  approve(params: ApproveParams) {
    return this.request(Methods.approve, approvalParams(params));
  }
  answer(params: AnswerParams) {
    return this.request(Methods.answer, params);
  }
  cancel(params: CancelParams) {
    return this.request(Methods.cancel, params);
  }
  resume(params: ResumeParams) {
    return this.request(Methods.resume, params);
  }
  replay(params: ReplayParams) {
    return this.request(Methods.replay, params);
  }
  sessions(params: SessionsParams = {}) {
    return this.request(Methods.sessions, params);
  }
  session(params: SessionParams) {
    return this.request(Methods.session, params);
  }
  deleteSession(params: DeleteSessionParams) {
    return this.request(Methods.deleteSession, params);
  }
  checkpoints(params: SessionParams) {
    return this.request(Methods.checkpoints, params);
  }
  restorePreview(params: CheckpointParams) {
    return this.request(Methods.restorePreview, params);
  }
  restore(params: RestoreParams) {
    return this.request(Methods.restore, params);
  }
  status() {
    return this.request(Methods.status, {});
  }
  /** The `/` commands a prompt may start with (built-in, the folder's, the user's). */
  commands(params: CommandsParams = {}) {
    return this.request(Methods.commands, params);
  }
  worktreeList(params: WorktreeListParams = {}) {
    return this.request(Methods.worktreeList, params);
  }
  worktreeDiff(params: WorktreeRunParams) {
    return this.request(Methods.worktreeDiff, params);
  }
  worktreeApply(params: WorktreeApplyParams) {
    return this.request(Methods.worktreeApply, params);
  }
  worktreeDiscard(params: WorktreeRunParams) {
    return this.request(Methods.worktreeDiscard, params);
  }
  worktreeKeep(params: WorktreeRunParams) {
    return this.request(Methods.worktreeKeep, params);
  }

  dispose(): void {
    this.listeners.clear();
    this.subscription.dispose();
  }
}
