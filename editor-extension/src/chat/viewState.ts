/**
 * The chat panel's state as the extension keeps it and the webview draws it (everything but the
 * transcript rows, see rows.ts). Computed by the extension only, so these stay TypeScript: the
 * messages that carry them are generated from messages.schema.json (see messages.ts).
 * Shared by `src/` (Node) and `media/` (browser); keep it free of runtime imports.
 */
import type { SessionSummary, TodoItem } from "../protocol/types";
import type { RunView, UsageView } from "../protocol/runView";

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
  /** The project instruction files the agent reads (`lovia/status`), as links. */
  instructions?: InstructionLink[];
}

/** An instruction file in use: its name relative to its folder (with what it covers) and where it is. */
export interface InstructionLink {
  label: string;
  uri: string;
}

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
