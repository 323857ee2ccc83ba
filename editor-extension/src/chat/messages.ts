/**
 * Messages between the extension and the chat webview. The webview is a view: it gets
 * the whole {@link ChatViewState} and posts {@link WebviewIntent}s back.
 * Shared by `src/` (Node) and `media/` (browser); keep it free of runtime imports.
 */
import type { ApprovalDecision, SessionSummary } from "../protocol/types";
import type { RunView } from "../protocol/runView";

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
}

export type WebviewIntent =
  | { type: "ready" }
  | { type: "send"; text: string; mode: "prompt" | "steer" }
  | { type: "unsteer"; runId: string; messageId: string }
  | { type: "cancel"; runId?: string }
  | { type: "steerRun"; runId: string; text: string }
  | { type: "approve"; runId: string; approvalId: string; decision: ApprovalDecision; message?: string }
  | { type: "openDiff"; runId: string; approvalId: string }
  | { type: "answer"; runId: string; questionId: string; answer: string }
  | { type: "openLocation"; uri: string; line?: number }
  | { type: "selectSession"; sessionId: string }
  | { type: "newSession" }
  | { type: "resume"; runId: string }
  | { type: "refreshSessions" }
  | { type: "deleteSession"; sessionId: string }
  | { type: "dismissError" }
  | { type: "setApiKey" }
  | { type: "chooseModel" }
  | { type: "useDemo" }
  | { type: "scrolled"; top: number; atBottom: boolean };

export type ExtensionMessage = { type: "state"; state: ChatViewState };

const INTENT_TYPES = new Set<WebviewIntent["type"]>([
  "ready",
  "send",
  "unsteer",
  "cancel",
  "steerRun",
  "approve",
  "openDiff",
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
]);

/** Shallow validation of a message coming from the webview (an untrusted boundary). */
export function isWebviewIntent(value: unknown): value is WebviewIntent {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  if (typeof v.type !== "string" || !INTENT_TYPES.has(v.type as WebviewIntent["type"])) return false;
  const str = (k: string) => typeof v[k] === "string";
  switch (v.type) {
    case "send":
      return str("text") && (v.mode === "prompt" || v.mode === "steer");
    case "unsteer":
      return str("runId") && str("messageId");
    case "cancel":
      return v.runId === undefined || str("runId");
    case "steerRun":
      return str("runId") && str("text");
    case "approve":
      return str("runId") && str("approvalId") && str("decision") && (v.message === undefined || str("message"));
    case "openDiff":
    case "resume":
      return str("runId") && (v.type === "resume" || str("approvalId"));
    case "answer":
      return str("runId") && str("questionId") && str("answer");
    case "openLocation":
      return str("uri") && (v.line === undefined || typeof v.line === "number");
    case "selectSession":
    case "deleteSession":
      return str("sessionId");
    case "scrolled":
      return typeof v.top === "number" && Number.isFinite(v.top) && typeof v.atBottom === "boolean";
    default:
      return true;
  }
}
