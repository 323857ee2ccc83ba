/**
 * Messages between the extension and the chat webview. The webview is a view: the extension
 * sends it the panel's state once ({@link ResetMessage}) and then only what changed
 * ({@link PatchMessage}: chrome fields, rows inserted/removed, and per-row field patches, with
 * streamed text as appends); the webview posts {@link WebviewIntent}s back.
 * Shared by `src/` (Node) and `media/` (browser); keep it free of runtime imports.
 */
import type { ApprovalDecision, ContextKind, EditedFile, Range, SessionSummary, TodoItem } from "../protocol/types";
import type { OutputChunk, RunView, UsageView } from "../protocol/runView";
import type { Row } from "./rows";

export type ServerState = "starting" | "running" | "restarting" | "stopped";

export interface PendingSteer {
  runId: string;
  messageId: string;
  text: string;
  /** A withdraw request is in flight. */
  withdrawing?: boolean;
}

export interface ChatError {
  text: string;
  hint?: string;
  /** JSON-RPC error code, when the server answered with one. */
  code?: number;
}

/** What the next run uses: the configured model, one picked in the panel, or the offline demo. */
export type ModelChoice = { kind: "default" } | { kind: "model"; model: string } | { kind: "demo" };

export interface ModelView {
  /** "none": no model is configured and none was picked. */
  kind: "setting" | "model" | "demo" | "none";
  label: string;
}

export interface ChatViewState {
  model: ModelView;
  server: { state: ServerState; detail?: string };
  trusted: boolean;
  sessions: SessionSummary[];
  sessionId?: string;
  sessionTitle?: string;
  /** Runs of the active session, oldest first. */
  runs: RunView[];
  /** The live run of the active session, if any. */
  liveRunId?: string;
  /** Subagent runs of those runs (and theirs): shown nested under their spawning tool call. */
  childRuns: RunView[];
  pendingSteers: PendingSteer[];
  error?: ChatError;
  /** A request started by the user is in flight (disables the send button). */
  busy: boolean;
  /** Where to scroll the shown session to when it is first drawn (after a reload). */
  scrollTop?: number;
  atBottom?: boolean;
  /** Text to put in the composer once (a cut turn's prompt after "Restore to here"). */
  draft?: { id: number; text: string };
  /** Why shell commands are not sandboxed here (`lovia/status`), until the user dismisses it. */
  sandboxNotice?: string;
}

/** A completion for `@` in the composer, and what a send carries for it. */
export interface Mention {
  kind: ContextKind;
  label: string;
  /** A path or a symbol's container, shown dimmed. */
  detail?: string;
  /** The file, folder or (for problems) workspace folder. */
  uri: string;
  range?: Range;
}

export type WebviewIntent =
  | { type: "ready" }
  | { type: "send"; text: string; mode: "prompt" | "steer"; context?: Mention[] }
  | { type: "mentionQuery"; query: string; requestId: number }
  | { type: "unsteer"; runId: string; messageId: string }
  | { type: "cancel"; runId?: string }
  | { type: "steerRun"; runId: string; text: string }
  | { type: "approve"; runId: string; approvalId: string; decision: ApprovalDecision; message?: string; edits?: EditedFile[] }
  | { type: "openDiff"; runId: string; approvalId: string }
  | { type: "openChange"; runId: string; path: string }
  | { type: "copy"; text: string }
  | { type: "insertCode"; text: string; language: string }
  | { type: "answer"; runId: string; questionId: string; answer: string }
  | { type: "openLocation"; uri: string; line?: number }
  | { type: "selectSession"; sessionId: string }
  | { type: "newSession" }
  | { type: "resume"; runId: string }
  | { type: "refreshSessions" }
  | { type: "deleteSession"; sessionId: string }
  | { type: "dismissError" }
  | { type: "dismissSandboxNotice" }
  | { type: "setApiKey" }
  | { type: "chooseModel" }
  | { type: "useDemo" }
  | { type: "scrolled"; top: number; atBottom: boolean }
  | { type: "restoreCheckpoint"; runId: string; checkpointId: string }
  | { type: "compareCheckpoint"; runId: string; checkpointId: string };

/** What the panel shows of the run it follows (the live one, else the session's last). */
export interface ActiveRunView {
  runId: string;
  status: RunView["status"];
  activity?: string;
  usage?: UsageView;
  todos: TodoItem[];
}

/** Everything around the transcript: the view state without its runs (and its subagents' runs). */
export interface ChromeState extends Omit<ChatViewState, "runs" | "childRuns"> {
  active?: ActiveRunView;
  /** What the shown session's runs cost, when their model's price is known. */
  sessionCostUsd?: number;
}

export type ChromeField = keyof ChromeState;

/** Changes to one row since the webview last had it. */
export interface RowPatch {
  key: string;
  rev: number;
  /** Fields replaced whole. */
  set?: Record<string, unknown>;
  /** Fields that are gone. */
  unset?: string[];
  /** Text appended to string fields (a streamed chunk). */
  append?: Record<string, string>;
  /** Tool output appended (folded with the same `appendOutput` as the event store). */
  output?: OutputChunk[];
}

export interface ResetMessage {
  type: "reset";
  chrome: ChromeState;
  rows: Row[];
}

export interface PatchMessage {
  type: "patch";
  chrome?: Partial<ChromeState>;
  unsetChrome?: ChromeField[];
  /** Keys of rows that are gone. */
  remove?: string[];
  /** New rows, in order; `after` is the key of the row before it (null: first). */
  insert?: { after: string | null; row: Row }[];
  patch?: RowPatch[];
}

/** Completions for an `@` the user is typing (answers a mentionQuery). */
export interface MentionsMessage {
  type: "mentions";
  requestId: number;
  items: Mention[];
}

/** What the view sync posts (the panel's state). */
export type SyncMessage = ResetMessage | PatchMessage;

export type ExtensionMessage = SyncMessage | MentionsMessage;

const INTENT_TYPES = new Set<WebviewIntent["type"]>([
  "ready",
  "send",
  "mentionQuery",
  "unsteer",
  "cancel",
  "steerRun",
  "approve",
  "openDiff",
  "openChange",
  "copy",
  "insertCode",
  "answer",
  "openLocation",
  "selectSession",
  "newSession",
  "resume",
  "refreshSessions",
  "deleteSession",
  "dismissError",
  "setApiKey",
  "chooseModel",
  "useDemo",
  "scrolled",
  "restoreCheckpoint",
  "compareCheckpoint",
]);

const MENTION_KINDS = new Set(["file", "folder", "symbol", "selection", "problems"]);

function isMention(value: unknown): value is Mention {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  return typeof m.kind === "string" && MENTION_KINDS.has(m.kind) && typeof m.label === "string" && typeof m.uri === "string";
}

/** Shallow validation of a message coming from the webview (an untrusted boundary). */
export function isWebviewIntent(value: unknown): value is WebviewIntent {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  if (typeof v.type !== "string" || !INTENT_TYPES.has(v.type as WebviewIntent["type"])) return false;
  const str = (k: string) => typeof v[k] === "string";
  switch (v.type) {
    case "send":
      return str("text") && (v.mode === "prompt" || v.mode === "steer") && (v.context === undefined || (Array.isArray(v.context) && v.context.every(isMention)));
    case "mentionQuery":
      return str("query") && typeof v.requestId === "number";
    case "unsteer":
      return str("runId") && str("messageId");
    case "cancel":
      return v.runId === undefined || str("runId");
    case "steerRun":
      return str("runId") && str("text");
    case "approve":
      return (
        str("runId") &&
        str("approvalId") &&
        str("decision") &&
        (v.message === undefined || str("message")) &&
        (v.edits === undefined ||
          (Array.isArray(v.edits) && v.edits.every((e) => typeof e === "object" && e !== null && typeof (e as EditedFile).path === "string" && typeof (e as EditedFile).newText === "string")))
      );
    case "openDiff":
    case "resume":
      return str("runId") && (v.type === "resume" || str("approvalId"));
    case "openChange":
      return str("runId") && str("path");
    case "copy":
      return str("text");
    case "insertCode":
      return str("text") && str("language");
    case "answer":
      return str("runId") && str("questionId") && str("answer");
    case "openLocation":
      return str("uri") && (v.line === undefined || typeof v.line === "number");
    case "selectSession":
    case "deleteSession":
      return str("sessionId");
    case "scrolled":
      return typeof v.top === "number" && Number.isFinite(v.top) && typeof v.atBottom === "boolean";
    case "restoreCheckpoint":
    case "compareCheckpoint":
      return str("runId") && str("checkpointId");
    default:
      return true;
  }
}
