/**
 * Types of the lovia editor protocol, v1 (see docs: shared/design/protocol.md).
 *
 * This module is free of `vscode` imports so that tests and other hosts can reuse it.
 */

export const PROTOCOL_VERSION = 1;

/** Custom request methods served by `lovia_server`. */
export const Methods = {
  run: "lovia/run",
  steer: "lovia/steer",
  unsteer: "lovia/unsteer",
  approve: "lovia/approve",
  answer: "lovia/answer",
  cancel: "lovia/cancel",
  resume: "lovia/resume",
  replay: "lovia/replay",
  sessions: "lovia/sessions",
  session: "lovia/session",
  deleteSession: "lovia/deleteSession",
  status: "lovia/status",
} as const;

export type MethodName = (typeof Methods)[keyof typeof Methods];

/** The one server-to-client notification carrying run events. */
export const EVENT_NOTIFICATION = "lovia/event";

/** Error codes defined by the protocol (besides the standard JSON-RPC ones). */
export const ErrorCodes = {
  RunNotFound: -32010,
  RunNotActive: -32011,
  RunAlreadyActive: -32012,
  ApprovalNotFound: -32013,
  NotResumable: -32014,
  PathOutsideWorkspace: -32015,
  ModelNotConfigured: -32016,
  /** Standard LSP: request before `initialize`. */
  ServerNotInitialized: -32002,
  InvalidParams: -32602,
} as const;

export type ErrorCodeName = keyof typeof ErrorCodes;

// ---------------------------------------------------------------------------
// Handshake

export type ApprovalTransport = "events" | "showMessageRequest";
export type EditMode = "server" | "workspaceEdit";

export interface LoviaInitializationOptions {
  protocolVersion?: number;
  client?: string;
  approvals?: ApprovalTransport;
  editMode?: EditMode;
  progress?: boolean;
  stateDir?: string;
}

export interface LoviaServerCapabilities {
  protocolVersion: number;
  methods: string[];
  eventKinds: string[];
  editModes: EditMode[];
  version: string;
}

// ---------------------------------------------------------------------------
// Settings (`lovia` configuration section)

export type Decision = "allow" | "ask" | "deny";
export type PermissionPreset = "readonly" | "coding" | "trusted";

export interface PathRule {
  pattern: string;
  read?: Decision;
  write?: Decision;
}

export interface CommandRule {
  pattern: string;
  decision: Decision;
}

export interface LoviaSettings {
  model?: string;
  permissions?: {
    preset?: PermissionPreset;
    pathRules?: PathRule[];
    commandRules?: CommandRule[];
    deniedPaths?: string[];
  };
  agent?: string;
  mcpServers?: Record<string, unknown>;
  maxTurns?: number;
  approvalTimeoutSeconds?: number | null;
}

// ---------------------------------------------------------------------------
// Requests

export interface Range {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

export interface ContextRef {
  uri: string;
  range?: Range;
}

export type RunStatus = "running" | "completed" | "failed" | "cancelled" | "interrupted";

export interface RunParams {
  prompt: string;
  sessionId?: string;
  cwd?: string;
  context?: ContextRef[];
  model?: string;
  agent?: string;
}
export interface RunResult {
  sessionId: string;
  runId: string;
  status: "running";
}

export interface SteerParams {
  runId: string;
  message: string;
}
export interface SteerResult {
  runId: string;
  messageId: string;
  accepted: true;
}

export interface UnsteerParams {
  runId: string;
  messageId: string;
}
export interface UnsteerResult {
  withdrawn: boolean;
}

export type ApprovalDecision = "allow_once" | "allow_always" | "reject_once" | "reject_always";
export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = [
  "allow_once",
  "allow_always",
  "reject_once",
  "reject_always",
];

export interface ApproveParams {
  runId: string;
  approvalId: string;
  decision: ApprovalDecision;
  message?: string;
}
export interface ApproveResult {
  approvalId: string;
  outcome: ApprovalOutcome;
}

export interface AnswerParams {
  runId: string;
  questionId: string;
  answer: string;
}
export interface AnswerResult {
  questionId: string;
}

export interface CancelParams {
  runId: string;
}
export interface CancelResult {
  runId: string;
  status: "cancelling";
}

export interface ResumeParams {
  runId: string;
}
export interface ResumeResult {
  sessionId: string;
  runId: string;
  status: "running";
}

export interface ReplayParams {
  runId: string;
  afterSeq?: number;
}
export interface ReplayResult {
  events: LoviaEvent[];
  lastSeq: number;
  status: RunStatus;
}

export interface SessionsParams {
  limit?: number;
  offset?: number;
  query?: string;
}
export interface SessionSummary {
  sessionId: string;
  title: string;
  updatedAt: string | number;
  lastRunId: string | null;
  lastRunStatus: RunStatus | null;
  resumable: boolean;
}
export interface SessionsResult {
  sessions: SessionSummary[];
}

export interface SessionParams {
  sessionId: string;
}
/** A run listed by `lovia/session`; the protocol leaves the shape open, `runId` is what we rely on. */
export interface SessionRunRef {
  runId: string;
  status?: RunStatus;
  [key: string]: unknown;
}
export interface SessionResult {
  sessionId: string;
  title: string;
  entries: unknown[];
  runs: (SessionRunRef | string)[];
}

export interface DeleteSessionParams {
  sessionId: string;
}
export interface DeleteSessionResult {
  deleted: boolean;
}

export type StatusParams = Record<string, never>;
export interface StatusResult {
  version?: string;
  model?: string | null;
  [key: string]: unknown;
}

/** Request method → [params, result]. */
export interface RequestMap {
  "lovia/run": [RunParams, RunResult];
  "lovia/steer": [SteerParams, SteerResult];
  "lovia/unsteer": [UnsteerParams, UnsteerResult];
  "lovia/approve": [ApproveParams, ApproveResult];
  "lovia/answer": [AnswerParams, AnswerResult];
  "lovia/cancel": [CancelParams, CancelResult];
  "lovia/resume": [ResumeParams, ResumeResult];
  "lovia/replay": [ReplayParams, ReplayResult];
  "lovia/sessions": [SessionsParams, SessionsResult];
  "lovia/session": [SessionParams, SessionResult];
  "lovia/deleteSession": [DeleteSessionParams, DeleteSessionResult];
  "lovia/status": [StatusParams, StatusResult];
}

// ---------------------------------------------------------------------------
// Events

export interface EventEnvelope {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
}

export interface Location {
  path: string;
  uri: string;
  line?: number;
}

export type ToolKind =
  | "read"
  | "edit"
  | "delete"
  | "move"
  | "search"
  | "execute"
  | "fetch"
  | "think"
  | "other";

export interface FileDiff {
  path: string;
  uri: string;
  oldText: string | null;
  newText: string;
}

export type ToolContent = { type: "text"; text: string } | ({ type: "diff" } & FileDiff);

export type ToolStatus = "completed" | "failed" | "declined" | "cancelled";
export type ApprovalAction = "file.write" | "file.create" | "file.delete" | "shell" | "read.outside" | "other";
export type ApprovalOutcome = "allowed" | "rejected" | "cancelled" | "timed_out";

export interface ApprovalOption {
  decision: ApprovalDecision;
  label: string;
}

export interface RunError {
  type: string;
  message: string;
  hint?: string;
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  contextTokens?: number;
  contextWindow?: number;
  [key: string]: unknown;
}

export interface TodoItem {
  content: string;
  status: "pending" | "in_progress" | "completed" | string;
  activeForm?: string;
}

export interface EventPayloads {
  "run.started": { prompt: string; cwd: string; model: string | null; agent: string | null; resumed: boolean };
  "user.message": { messageId: string; text: string; source: "prompt" | "steer" };
  "message.delta": { messageId: string; text: string };
  "reasoning.delta": { messageId: string; text: string };
  "message.completed": { messageId: string; text: string };
  "output.discarded": { messageId: string };
  "tool.call": {
    toolCallId: string;
    name: string;
    toolKind: ToolKind;
    title: string;
    input: unknown;
    locations: Location[];
  };
  "tool.update": { toolCallId: string; output: { text: string; stream: "stdout" | "stderr" } };
  "tool.result": { toolCallId: string; status: ToolStatus; content: ToolContent[]; isError: boolean };
  "approval.requested": {
    approvalId: string;
    toolCallId: string;
    action: ApprovalAction;
    title: string;
    detail: string;
    paths: string[];
    command?: string;
    diff?: FileDiff[];
    options: ApprovalOption[];
  };
  "approval.resolved": {
    approvalId: string;
    outcome: ApprovalOutcome;
    decision?: ApprovalDecision;
    by: "user" | "policy" | "editor";
  };
  "question.requested": { questionId: string; text: string; choices?: string[] };
  "question.answered": { questionId: string; answer: string };
  "todo.updated": { items: TodoItem[] };
  handoff: { fromAgent: string; toAgent: string; reason: string };
  compaction: { tokensBefore: number; tokensAfter: number; stages: unknown };
  "usage.updated": Required<Pick<Usage, "inputTokens" | "outputTokens" | "contextTokens" | "contextWindow">>;
  "run.finished": {
    status: Exclude<RunStatus, "running">;
    output?: unknown;
    error?: RunError;
    usage: Usage;
    resumable: boolean;
  };
}

export type EventKind = keyof EventPayloads;

export const EVENT_KINDS: readonly EventKind[] = [
  "run.started",
  "user.message",
  "message.delta",
  "reasoning.delta",
  "message.completed",
  "output.discarded",
  "tool.call",
  "tool.update",
  "tool.result",
  "approval.requested",
  "approval.resolved",
  "question.requested",
  "question.answered",
  "todo.updated",
  "handoff",
  "compaction",
  "usage.updated",
  "run.finished",
];

/** One `lovia/event` notification, discriminated by `kind`. */
export type LoviaEvent = {
  [K in EventKind]: EventEnvelope & { kind: K } & EventPayloads[K];
}[EventKind];

export type EventOf<K extends EventKind> = Extract<LoviaEvent, { kind: K }>;

/** Structural check for an incoming notification payload. */
export function isLoviaEvent(value: unknown): value is LoviaEvent {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.runId === "string" &&
    typeof v.sessionId === "string" &&
    typeof v.seq === "number" &&
    Number.isInteger(v.seq) &&
    v.seq >= 1 &&
    typeof v.kind === "string"
  );
}
