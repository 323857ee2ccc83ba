/**
 * Types of the lovia editor protocol, v1.
 *
 * Every request, result and event type comes from `./generated` (generated from the server's
 * JSON Schema, itself generated from the Python models); this module only names them for the
 * extension and adds the runtime constants, each checked against the generated types.
 * Free of `vscode` imports so that tests and other hosts can reuse it.
 */

import type * as G from "./generated";
import { EVENT_KIND_LIST } from "./generated";

export type {
  AnswerParams,
  AnswerResult,
  ApprovalAction,
  ApprovalBy,
  ApprovalOption,
  ApprovalOutcome,
  ApproveParams,
  ApproveResult,
  AssistantEntry,
  CancelResult,
  ChangedFile,
  CheckpointInfo,
  CheckpointKind,
  CheckpointParams,
  CheckpointsResult,
  CommandInfo,
  CommandsParams,
  CommandsResult,
  ContextItem as ContextRef,
  ContextKind,
  ContextSummary,
  Problem,
  DeleteSessionResult,
  DiffContent,
  EditMode,
  EditedFile,
  FileDiff,
  FinalStatus,
  FolderAcl,
  LaunchResult as RunResult,
  LaunchResult as ResumeResult,
  LiveRun,
  Location,
  MCPRestartParams,
  MCPRestartResult,
  MCPServerInfo,
  MCPServerState,
  LoviaEvent,
  LoviaProtocol,
  Range,
  ReplayParams,
  ReplayResult,
  RestoreFile,
  RestoreParams,
  RestorePreviewResult,
  RestoreResult as RestoreFilesResult,
  RunError,
  RunIdParams as CancelParams,
  RunIdParams as ResumeParams,
  RunInfo,
  RunParams,
  RunStatus,
  InstructionFileInfo,
  SandboxStatus,
  SubagentRef,
  ChildRun,
  SessionParams,
  SessionParams as DeleteSessionParams,
  SessionResult,
  SessionRule,
  SessionSummary,
  SessionsParams,
  SessionsResult,
  SkippedFile,
  StatusParams,
  StatusResult,
  SteerParams,
  SteerResult,
  TextContent,
  TodoItem,
  ToolEntry,
  ToolKind,
  ToolStatus,
  ToolStream,
  UnsteerParams,
  UnsteerResult,
  Usage,
  UserEntry,
  WorktreeApplyParams,
  WorktreeApplyResult,
  WorktreeDiffResult,
  WorktreeDiscardResult,
  WorktreeEdit,
  WorktreeFile,
  WorktreeKeepResult,
  WorktreeListParams,
  WorktreeListResult,
  WorktreeRun,
  WorktreeRunParams,
  WorktreeState,
} from "./generated";

export const PROTOCOL_VERSION: G.LoviaProtocol["protocolVersion"] = 1;

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
  checkpoints: "lovia/checkpoints",
  restorePreview: "lovia/restorePreview",
  restore: "lovia/restore",
  status: "lovia/status",
  mcpRestart: "lovia/mcpRestart",
  commands: "lovia/commands",
  worktreeList: "lovia/worktree/list",
  worktreeDiff: "lovia/worktree/diff",
  worktreeApply: "lovia/worktree/apply",
  worktreeDiscard: "lovia/worktree/discard",
  worktreeKeep: "lovia/worktree/keep",
} as const satisfies Record<string, keyof G.LoviaProtocol["methods"]>;

export type MethodName = keyof G.LoviaProtocol["methods"];

/** Request method → [params, result]. */
export type RequestMap = {
  [M in MethodName]: [G.LoviaProtocol["methods"][M]["params"], G.LoviaProtocol["methods"][M]["result"]];
};

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
  /** `lovia/restore` while a run is live in that folder. */
  RestoreWhileRunning: -32017,
  CheckpointNotFound: -32018,
  /** `isolation: "worktree"` where no worktree can be made (not a git repository, no commit, no git). */
  WorktreeUnavailable: -32019,
  /** A worktree run that is unknown, or already applied, discarded or kept. */
  WorktreeNotFound: -32020,
  /** `lovia/worktree/apply` would land protected files the request did not confirm (`data.paths`). */
  ProtectedPathsUnconfirmed: -32021,
  /** Standard LSP: request before `initialize`. */
  ServerNotInitialized: -32002,
  InvalidParams: -32602,
} as const satisfies Record<string, G.ErrorCode>;

export type ErrorCodeName = keyof typeof ErrorCodes;

// ---------------------------------------------------------------------------
// Handshake and settings (generated from the server's InitOptions and LoviaSettings models)

export type ApprovalTransport = G.StatusResult["approvals"];
export type LoviaInitializationOptions = G.InitOptions;
export type LoviaServerCapabilities = G.ServerCapabilities;
export type LoviaSettings = G.LoviaSettings;
export type PermissionSettings = G.PermissionSettings;
export type PathRule = G.PathRuleSetting;
export type CommandRule = G.CommandRuleSetting;
/** An ACL decision (`lovia.permissions.*`). */
export type Decision = NonNullable<G.PermissionSettings["write"]>;
export type PermissionPreset = NonNullable<G.PermissionSettings["preset"]>;
/** The `editMode` setting: `auto` lets the server pick (`workspaceEdit` when it can). */
export type EditModeSetting = NonNullable<G.LoviaSettings["editMode"]>;

/** `lovia.subagents`: the built-in agent's background children (server defaults apply). */
export type SubagentSettings = G.SubagentSettings;

// ---------------------------------------------------------------------------
// Requests

export type ApprovalChoice = G.ApprovalChoice;
export const APPROVAL_DECISIONS = [
  "allow_once",
  "allow_always",
  "reject_once",
  "reject_always",
] as const satisfies readonly ApprovalChoice[];

/** A transcript message of `lovia/session`. */
export type SessionEntry = G.SessionResult["entries"][number];

// ---------------------------------------------------------------------------
// Events

/** What every event carries before its payload. */
export type EventEnvelope = Pick<G.LoviaEvent, "sessionId" | "runId" | "seq" | "ts" | "parentRunId">;

export type EventKind = G.LoviaEvent["kind"];
export type EventOf<K extends EventKind> = Extract<G.LoviaEvent, { kind: K }>;

/** Each kind's payload: the event without its envelope. */
export type EventPayloads = {
  [K in EventKind]: Omit<EventOf<K>, keyof EventEnvelope | "kind">;
};

export type ToolContent = G.TextContent | G.DiffContent;

export const EVENT_KINDS: readonly EventKind[] = EVENT_KIND_LIST;

/** Structural check for an incoming notification payload. */
export function isLoviaEvent(value: unknown): value is G.LoviaEvent {
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
