/**
 * Types of the lovia editor protocol, generated from lovia_server/protocol/schema.json
 * by `npm run gen:protocol` (json-schema-to-typescript). Do not edit: change the Python
 * models, run `python -m lovia_server.protocol.schema`, then `npm run gen:protocol`.
 */

export type ContextKind = "file" | "folder" | "symbol" | "selection" | "problems";
/**
 * A user's answer to an approval, the same from `lovia/approve` to the run.
 */
export type ApprovalChoice = "allow_once" | "allow_always" | "reject_once" | "reject_always";
/**
 * One `lovia/event` notification: the envelope and one kind's payload.
 */
export type LoviaEvent =
  | RunStartedEvent
  | UserMessageEvent
  | MessageDeltaEvent
  | ReasoningDeltaEvent
  | MessageCompletedEvent
  | OutputDiscardedEvent
  | ModelRetryingEvent
  | ToolCallEvent
  | ToolUpdateEvent
  | ToolResultEvent
  | ApprovalRequestedEvent
  | ApprovalResolvedEvent
  | QuestionRequestedEvent
  | QuestionAnsweredEvent
  | TodoUpdatedEvent
  | HandoffEvent
  | CompactionEvent
  | UsageUpdatedEvent
  | CheckpointCreatedEvent
  | SubagentStartedEvent
  | SubagentFinishedEvent
  | MCPStatusEvent
  | RunFinishedEvent;
export type MessageSource = "prompt" | "steer";
export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "fetch" | "think" | "other";
export type ToolStream = "stdout" | "stderr";
export type ToolStatus = "completed" | "failed" | "declined" | "cancelled";
export type ApprovalAction = "file.write" | "file.create" | "file.delete" | "shell" | "read.outside" | "other";
export type ApprovalOutcome = "allowed" | "rejected" | "cancelled" | "timed_out";
export type ApprovalBy = "user" | "policy" | "editor";
export type FinalStatus = "completed" | "failed" | "cancelled" | "interrupted";
export type RunStatus =
  "running" | "awaiting_approval" | "cancelling" | "completed" | "failed" | "cancelled" | "interrupted";
export type CheckpointKind = "turn" | "restore" | "manual";
export type FileChangeStatus = "added" | "modified" | "deleted";
export type RestoreAction = "create" | "modify" | "delete";
export type SkipReason = "too_large" | "unreadable" | "denied" | "unsaved_file_in_the_way" | "failed";
export type EditMode = "server" | "workspaceEdit";
export type MCPServerState = "idle" | "starting" | "running" | "restarting" | "failed" | "stopped";
export type CommandSource = "built-in" | "workspace" | "user";
export type WorktreeState = "queued" | "active" | "applied" | "discarded" | "kept";
export type LandingVerdict = "clean" | "merged" | "unchanged" | "conflict";
/**
 * JSON-RPC error codes: -32700 ParseError, -32600 InvalidRequest, -32601 MethodNotFound, -32602 InvalidParams, -32603 InternalError, -32002 ServerNotInitialized, -32800 RequestCancelled, -32010 RunNotFound, -32011 RunNotActive, -32012 RunAlreadyActive, -32013 ApprovalNotFound, -32014 NotResumable, -32015 PathOutsideWorkspace, -32016 ModelNotConfigured, -32017 RestoreWhileRunning, -32018 CheckpointNotFound, -32019 WorktreeUnavailable, -32020 WorktreeNotFound, -32021 ProtectedPathsUnconfirmed
 */
export type ErrorCode =
  | -32700
  | -32600
  | -32601
  | -32602
  | -32603
  | -32002
  | -32800
  | -32010
  | -32011
  | -32012
  | -32013
  | -32014
  | -32015
  | -32016
  | -32017
  | -32018
  | -32019
  | -32020
  | -32021;

/**
 * The lovia editor protocol (generated from lovia_server.protocol; do not edit by hand): every lovia/* request's params and result, the lovia/event notification, the error codes, the initialization options and the settings.
 */
export interface LoviaProtocol {
  protocolVersion: 1;
  methods: {
    /**
     * returned at once; the run streams as events and ends with `run.finished`
     */
    "lovia/run": {
      params: RunParams;
      result: LaunchResult;
    };
    /**
     * delivered at the next turn start, echoed as `user.message{source:"steer"}` — a steer that arrives while the final answer is being written makes the run continue with one more turn, so an accepted message is never dropped. A message that starts with `/name` is a command, not a steer: -32602 (`field: "message"`) with a hint to send it when the run has ended (a path such as `/usr/bin/env is old`, or a line begun with a space, steers)
     */
    "lovia/steer": {
      params: SteerParams;
      result: SteerResult;
    };
    /**
     * false once delivered or after the run
     */
    "lovia/unsteer": {
      params: UnsteerParams;
      result: UnsteerResult;
    };
    /**
     * `allow_always`/`reject_always` remember the decision for the session (the file; the exact command text, whitespace included, together with the resolved directory it runs in — `lovia/status` lists it as `shell:["<cwd>", "<command>"]`; or the tool); a rejection `message` is what the model is told; `edits` (with an allow decision, for an approval with a `diff`) is the text the user approved per file — some hunks accepted, or the proposal edited: that text is written instead of the tool's and the model is told exactly what was applied
     */
    "lovia/approve": {
      params: ApproveParams;
      result: ApproveResult;
    };
    /**
     * answers an `ask_human` question
     */
    "lovia/answer": {
      params: AnswerParams;
      result: AnswerResult;
    };
    /**
     * cooperative, and a tool still running after 3 s is interrupted; completed turns are kept
     */
    "lovia/cancel": {
      params: RunIdParams;
      result: CancelResult;
    };
    /**
     * continues an interrupted run from its checkpoint; pending approvals are asked again
     */
    "lovia/resume": {
      params: RunIdParams;
      result: LaunchResult;
    };
    /**
     * for any stored run
     */
    "lovia/replay": {
      params: ReplayParams;
      result: ReplayResult;
    };
    /**
     * newest first
     */
    "lovia/sessions": {
      params: SessionsParams;
      result: SessionsResult;
    };
    /**
     * the transcript as render-ready messages
     */
    "lovia/session": {
      params: SessionParams;
      result: SessionResult;
    };
    /**
     * refused with -32012 while a run is live
     */
    "lovia/deleteSession": {
      params: SessionParams;
      result: DeleteSessionResult;
    };
    /**
     * oldest first; a turn gets one before its first call that may change files
     */
    "lovia/checkpoints": {
      params: SessionParams;
      result: CheckpointsResult;
    };
    /**
     * what `lovia/restore` would change, with each file's text and diff; files changed by hand after the checkpoint (or unsaved in the editor) are flagged
     */
    "lovia/restorePreview": {
      params: CheckpointParams;
      result: RestorePreviewResult;
    };
    /**
     * takes an undo checkpoint first; hand-changed files are kept unless forced; refused with -32017 while a run is live in that folder, and with -32021 when it would write a protected file not listed in `confirmProtected`
     */
    "lovia/restore": {
      params: RestoreParams;
      result: RestoreResult;
    };
    /**
     * `folders` is the effective ACL per folder; `sessionRules` the remembered decisions
     */
    "lovia/status": {
      params: StatusParams;
      result: StatusResult;
    };
    /**
     * stops one pooled MCP server and starts it again now (-32602 for an unknown name)
     */
    "lovia/mcpRestart": {
      params: MCPRestartParams;
      result: MCPRestartResult;
    };
    /**
     * the `/` commands a prompt may start with (built-in, the workspace's, the user's); `lovia/run` expands such a prompt, answers `/help` without the model and refuses an unknown `/name` with -32602 and `data.hint`
     */
    "lovia/commands": {
      params: CommandsParams;
      result: CommandsResult;
    };
    /**
     * the worktree runs of this state directory with their state, newest first
     */
    "lovia/worktree/list": {
      params: WorktreeListParams;
      result: WorktreeListResult;
    };
    /**
     * the files a worktree run changed against its base, judged against the workspace now
     */
    "lovia/worktree/diff": {
      params: WorktreeRunParams;
      result: WorktreeDiffResult;
    };
    /**
     * lands the reviewed changes after a restore point; any conflict and nothing is written (a folder that is a symbolic link is one); a protected file lands only when listed in `confirmProtected` (-32021 otherwise); the worktree and branch go once applied; `alsoDiscard` discards the other candidates
     */
    "lovia/worktree/apply": {
      params: WorktreeApplyParams;
      result: WorktreeApplyResult;
    };
    /**
     * removes the worktree and its branch (-32012 while the run is live)
     */
    "lovia/worktree/discard": {
      params: WorktreeRunParams;
      result: WorktreeDiscardResult;
    };
    /**
     * commits the run's work on its branch, removes the worktree, leaves the branch to the user
     */
    "lovia/worktree/keep": {
      params: WorktreeRunParams;
      result: WorktreeKeepResult;
    };
  };
  /**
   * requests the server sends a client that declared `initializationOptions.lovia.editorIntel`
   */
  clientMethods: {
    /**
     * the Problems list of some files or all; with `after`, answered once they were updated
     */
    "lovia/editor/diagnostics": {
      params: EditorDiagnosticsParams;
      result: EditorDiagnosticsResult;
    };
    /**
     * definition, references or implementation at a position, from the editor's language servers
     */
    "lovia/editor/locations": {
      params: EditorLocationsParams;
      result: EditorLocationsResult;
    };
    /**
     * a document's symbols, or a workspace symbol search
     */
    "lovia/editor/symbols": {
      params: EditorSymbolsParams;
      result: EditorSymbolsResult;
    };
  };
  event: LoviaEvent;
  errorCode: ErrorCode;
  serverCapabilities: ServerCapabilities;
  initializationOptions: InitOptions;
  settings: LoviaSettings;
}
export interface RunParams {
  prompt: string;
  sessionId?: string;
  cwd?: string;
  context?: ContextItem[];
  model?: string;
  agent?: string;
  isolation?: "workspace" | "worktree";
  includeUncommitted?: boolean;
  mode?: "plan" | "act";
}
/**
 * Something the user attached to a prompt (an `@` mention): a file or a line range of
 * it, a folder, a workspace symbol, the selection, or Problems. `kind` defaults to
 * `folder` for a directory and `file` otherwise; `label` is what the user picked (a
 * symbol's name); `problems` carries the diagnostics for `kind: "problems"` (`uri` is
 * then the folder or file they are for).
 */
export interface ContextItem {
  uri: string;
  range?: Range;
  kind?: ContextKind;
  label?: string;
  problems?: Problem[];
}
export interface Range {
  start: Position;
  end: Position;
}
export interface Position {
  line?: number;
  character?: number;
}
/**
 * One diagnostic of the editor's Problems list.
 */
export interface Problem {
  uri: string;
  range?: Range;
  severity?: "error" | "warning" | "info" | "hint";
  message: string;
  source?: string;
}
/**
 * A run that started (or resumed) and now streams events; a worktree run over the
 * `lovia.worktrees.maxConcurrent` limit is `queued` and starts when a slot frees.
 */
export interface LaunchResult {
  sessionId: string;
  runId: string;
  status: "running" | "queued";
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
export interface ApproveParams {
  runId: string;
  approvalId: string;
  decision: ApprovalChoice;
  message?: string;
  edits?: EditedFile[];
}
/**
 * What the user approved for one file of an edit's preview: the whole new text after
 * accepting some of its hunks or editing the proposal. `path` is one of the approval's
 * `diff` paths.
 */
export interface EditedFile {
  path: string;
  newText: string;
}
export interface ApproveResult {
  approvalId: string;
  outcome: "allowed" | "rejected";
}
export interface AnswerParams {
  runId: string;
  questionId: string;
  answer: string;
}
export interface AnswerResult {
  questionId: string;
}
export interface RunIdParams {
  runId: string;
}
export interface CancelResult {
  runId: string;
  status: "cancelling";
}
export interface ReplayParams {
  runId: string;
  afterSeq?: number;
}
/**
 * Stored events after `afterSeq`: each one a `LoviaEvent` exactly as it was sent.
 */
export interface ReplayResult {
  events: LoviaEvent[];
  lastSeq: number;
  status: RunStatus;
}
export interface RunStartedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "run.started";
  prompt: string;
  cwd: string;
  model: string | null;
  agent: string;
  resumed: boolean;
  subagent?: SubagentRef;
}
/**
 * Whose event this is when a subagent (a child run) raised it: shown on approval cards.
 */
export interface SubagentRef {
  runId: string;
  taskId: string;
  name: string;
}
export interface UserMessageEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "user.message";
  messageId: string;
  text: string;
  source: MessageSource;
  context?: ContextSummary[];
}
/**
 * What the model got for one of the prompt's context items (the chips on the message):
 * `truncated` when it was cut to the size limits, `note` says how (or why it is empty).
 */
export interface ContextSummary {
  kind: "file" | "folder" | "symbol" | "selection" | "problems";
  label: string;
  uri: string;
  line?: number;
  endLine?: number;
  chars: number;
  truncated: boolean;
  note?: string;
}
export interface MessageDeltaEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "message.delta";
  messageId: string;
  text: string;
}
export interface ReasoningDeltaEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "reasoning.delta";
  messageId: string;
  text: string;
}
export interface MessageCompletedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "message.completed";
  messageId: string;
  text: string;
}
export interface OutputDiscardedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "output.discarded";
  messageId: string;
}
export interface ModelRetryingEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "model.retrying";
  messageId: string;
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  retryAt: number;
  reason: string;
  statusCode?: number;
  hint?: string;
}
export interface ToolCallEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "tool.call";
  toolCallId: string;
  name: string;
  toolKind: ToolKind;
  title: string;
  input: {
    [k: string]: unknown | undefined;
  };
  locations: Location[];
  server?: string;
}
/**
 * A file a tool call touches, for click-through.
 */
export interface Location {
  path: string;
  uri: string;
  line?: number;
}
export interface ToolUpdateEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "tool.update";
  toolCallId: string;
  output: ToolOutput;
}
export interface ToolOutput {
  text: string;
  stream: ToolStream;
}
export interface ToolResultEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "tool.result";
  toolCallId: string;
  status: ToolStatus;
  content: (TextContent | DiffContent)[];
  isError: boolean;
}
export interface TextContent {
  type: "text";
  text: string;
}
export interface DiffContent {
  type: "diff";
  path: string;
  uri: string;
  oldText: string | null;
  newText: string;
}
export interface ApprovalRequestedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "approval.requested";
  approvalId: string;
  toolCallId: string;
  title: string;
  paths: string[];
  action: ApprovalAction;
  command?: string;
  detail: string;
  diff?: FileDiff[];
  options: ApprovalOption[];
  subagent?: SubagentRef;
  warning?: string;
}
/**
 * A file's text before and after an edit (`oldText` is null for a new file).
 *
 * Named as it is: the wire form of `lovia.tools.presentation.FileDiff`.
 */
export interface FileDiff {
  path: string;
  uri: string;
  oldText: string | null;
  newText: string;
}
export interface ApprovalOption {
  decision: ApprovalChoice;
  label: string;
}
export interface ApprovalResolvedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "approval.resolved";
  approvalId: string;
  outcome: ApprovalOutcome;
  by: ApprovalBy;
  decision?: ApprovalChoice;
  edited?: boolean;
}
export interface QuestionRequestedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "question.requested";
  questionId: string;
  text: string;
  choices?: string[];
  multiSelect?: boolean;
  subagent?: SubagentRef;
}
export interface QuestionAnsweredEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "question.answered";
  questionId: string;
  answer: string;
}
export interface TodoUpdatedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "todo.updated";
  items: TodoItem[];
}
/**
 * Named as it is: the wire form of `lovia.plugins.todo.TodoItem`.
 */
export interface TodoItem {
  content: string;
  status: string;
  activeForm?: string;
}
export interface HandoffEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "handoff";
  fromAgent: string;
  toAgent: string;
  reason: string | null;
}
export interface CompactionEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "compaction";
  tokensBefore: number | null;
  tokensAfter: number | null;
  stages: string[];
  reactive: boolean;
  detail: string[];
}
export interface UsageUpdatedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "usage.updated";
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  contextTokens: number | null;
  contextWindow: number | null;
  costUsd?: number;
  sessionCostUsd?: number;
  turn?: TurnUsage;
}
/**
 * One model call's tokens: `inputTokens` is its whole prompt, of which
 * `cacheReadTokens` were served from the provider's prompt cache and `cacheWriteTokens`
 * written to it.
 */
export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}
export interface CheckpointCreatedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "checkpoint.created";
  checkpointId: string;
  turnIndex: number;
  label: string;
  createdAt: number;
  root: string;
  rootUri: string;
}
export interface SubagentStartedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "subagent.started";
  childRunId: string;
  childSessionId: string;
  taskId: string;
  name: string;
  prompt: string;
  toolCallId: string | null;
  resumed: boolean;
}
export interface SubagentFinishedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "subagent.finished";
  childRunId: string;
  taskId: string;
  status: FinalStatus;
  usage: Usage;
  summary?: string;
  error?: RunError;
}
/**
 * Token counts of a run so far (`inputTokens` includes the cached reads and writes);
 * `contextTokens` is the last turn's prompt size, `turn` that call's own counts;
 * `costUsd` what the run cost and `sessionCostUsd` the conversation so far, when the
 * model's price is known (`lovia.modelPrices`).
 *
 * Named as it is: the wire form of `lovia.messages.Usage`.
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  contextTokens: number | null;
  contextWindow: number | null;
  costUsd?: number;
  sessionCostUsd?: number;
  turn?: TurnUsage;
}
export interface RunError {
  type: string;
  message: string;
  hint?: string;
}
export interface MCPStatusEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "mcp.status";
  server: string;
  state: string;
  tools: string[];
  error?: string;
}
export interface RunFinishedEvent {
  sessionId: string;
  runId: string;
  seq: number;
  ts: number;
  parentRunId?: string;
  kind: "run.finished";
  status: FinalStatus;
  usage: Usage;
  resumable: boolean;
  output?: unknown;
  error?: RunError;
}
export interface SessionsParams {
  limit?: number;
  offset?: number;
  query?: string;
}
export interface SessionsResult {
  sessions: SessionSummary[];
}
export interface SessionSummary {
  sessionId: string;
  title: string;
  updatedAt: number;
  lastRunId: string | null;
  lastRunStatus: RunStatus | null;
  resumable: boolean;
  children: ChildRun[];
}
/**
 * A subagent: a child run in a session of its own, spawned by a run of this session.
 */
export interface ChildRun {
  runId: string;
  sessionId: string;
  parentRunId: string;
  taskId: string;
  name: string;
  status: RunStatus;
  resumable: boolean;
}
export interface SessionParams {
  sessionId: string;
}
/**
 * A conversation for rendering: messages, the todo list, its runs and their subagents
 * (`parentSessionId` when the session is itself a subagent's).
 */
export interface SessionResult {
  sessionId: string;
  title: string;
  entries: (UserEntry | AssistantEntry | ToolEntry)[];
  todos: TodoItem[];
  runs: RunInfo[];
  children: ChildRun[];
  parentSessionId?: string;
}
export interface UserEntry {
  role: "user";
  content: string;
}
export interface AssistantEntry {
  role: "assistant";
  content: string;
  reasoning: string;
  toolCalls: TranscriptToolCall[];
}
export interface TranscriptToolCall {
  id: string;
  name: string;
  input: {
    [k: string]: unknown | undefined;
  };
  title: string;
  toolKind: ToolKind;
}
export interface ToolEntry {
  role: "tool";
  toolCallId: string;
  content: string;
  isError: boolean;
}
/**
 * A stored run record.
 */
export interface RunInfo {
  runId: string;
  sessionId: string;
  status: RunStatus;
  error: string | null;
  prompt: string | null;
  model: string | null;
  agent: string | null;
  startedAt: number;
  finishedAt: number | null;
  usage: Usage | null;
  resumable: boolean;
  parentRunId?: string;
  taskId?: string;
}
export interface DeleteSessionResult {
  deleted: boolean;
}
export interface CheckpointsResult {
  sessionId: string;
  available: boolean;
  reason?: string;
  checkpoints: CheckpointInfo[];
}
/**
 * A restore point: the files of a workspace folder as they were before a turn changed
 * them (`turn`), or just before a restore (`restore`: restoring it undoes that).
 */
export interface CheckpointInfo {
  checkpointId: string;
  kind: CheckpointKind;
  sessionId: string | null;
  runId: string | null;
  turnIndex: number | null;
  createdAt: number;
  label: string;
  userMessage: string | null;
  changedFiles: ChangedFile[];
  changedCount: number;
  restores: string | null;
  root: string;
  rootUri: string;
}
export interface ChangedFile {
  path: string;
  uri: string;
  status: FileChangeStatus;
}
export interface CheckpointParams {
  checkpointId: string;
}
export interface RestorePreviewResult {
  checkpoint: CheckpointInfo;
  files: RestoreFile[];
  handChanged: string[];
  skipped: SkippedFile[];
}
/**
 * What a restore does to one file; `oldText` is the file now, `newText` after.
 */
export interface RestoreFile {
  path: string;
  uri: string;
  action: RestoreAction;
  handChanged: boolean;
  unsaved: boolean;
  binary: boolean;
  oldText: string | null;
  newText: string | null;
  diff: string;
  textOmitted: boolean;
  protected: boolean;
}
export interface SkippedFile {
  path: string;
  reason: SkipReason;
  detail?: string;
}
export interface RestoreParams {
  checkpointId: string;
  conversation?: boolean;
  forcePaths?: string[];
  forceAll?: boolean;
  confirmProtected?: string[];
}
/**
 * Named as it is: the wire form of `lovia.workspace.restore_points.RestoreResult`.
 */
export interface RestoreResult {
  checkpoint: CheckpointInfo;
  undoCheckpoint: CheckpointInfo | null;
  restored: ChangedFile[];
  kept: string[];
  skipped: SkippedFile[];
  removedRuns: string[];
  prompt: string | null;
}
export interface StatusParams {}
export interface StatusResult {
  version: string;
  protocolVersion: number;
  model: string | null;
  agent: string;
  stateDir: string;
  approvals: "events" | "showMessageRequest";
  editMode: EditMode;
  folders: FolderAcl[];
  liveRuns: LiveRun[];
  sessionRules: SessionRule[];
  settingsProblems: string[];
  mcpServers: MCPServerInfo[];
  sandbox: SandboxStatus;
  delivery?: DeliveryStats;
  worktrees?: WorktreeCounts;
  instructions: InstructionFileInfo[];
}
/**
 * The effective permissions in one workspace folder.
 */
export interface FolderAcl {
  uri: string;
  path: string;
  preset: string;
  write: string;
  readOutside: string;
  writeOutside: string;
  shell: string;
  deniedPaths: string[];
  protectedPaths: string[];
  pathRules: PathRuleView[];
  commandRules: CommandRuleView[];
}
export interface PathRuleView {
  pattern: string;
  action: string;
  ops: string[];
}
export interface CommandRuleView {
  pattern: string;
  decision: string;
}
export interface LiveRun {
  runId: string;
  sessionId: string;
  status: RunStatus;
  turns: number;
  agent: string;
  model: string | null;
  startedAt: number;
  parentRunId?: string;
  taskId?: string;
}
/**
 * An `allow_always` / `reject_always` answer remembered for a session.
 */
export interface SessionRule {
  sessionId: string;
  subject: string;
  decision: "allow" | "reject";
}
/**
 * One `lovia.mcpServers` entry in the workspace's MCP pool.
 */
export interface MCPServerInfo {
  name: string;
  transport: "stdio" | "http";
  state: MCPServerState;
  tools: string[];
  error: string | null;
  starts: number;
  log: string | null;
}
/**
 * How the shell commands of this server's runs are confined (`lovia.sandbox`).
 */
export interface SandboxStatus {
  kind: "bubblewrap" | null;
  enabled: boolean;
  setting: "auto" | "on" | "off";
  network: "allow" | "ask" | "deny";
  allowedDomains: string[];
  reason: string | null;
}
/**
 * How far the client is behind reading the server's output (see "A slow or stopped
 * client" in docs/server.md): what waits for it, and what it was not sent live.
 */
export interface DeliveryStats {
  queuedBytes: number;
  limitBytes: number;
  droppedEvents: number;
  droppedBytes: number;
  skippedDeltas: number;
}
/**
 * `lovia/status.worktrees`: where this state directory's open worktree runs stand (the
 * runs themselves: `lovia/worktree/list`).
 */
export interface WorktreeCounts {
  queued: number;
  running: number;
  review: number;
  maxConcurrent: number;
}
/**
 * A project instruction file in use (`AGENTS.md` and friends, docs/customization.md).
 */
export interface InstructionFileInfo {
  path: string;
  folder: string;
  scope: "user" | "root" | "scoped";
  applyTo: string[];
  cut: boolean;
}
export interface MCPRestartParams {
  name: string;
}
export interface MCPRestartResult {
  server: MCPServerInfo;
}
export interface CommandsParams {
  cwd?: string;
}
export interface CommandsResult {
  commands: CommandInfo[];
}
/**
 * One `/name` a prompt may start with.
 */
export interface CommandInfo {
  name: string;
  description: string;
  argumentHint: string | null;
  source: CommandSource;
  path: string | null;
  mode: ("plan" | "act") | null;
}
export interface WorktreeListParams {
  includeClosed?: boolean;
}
export interface WorktreeListResult {
  worktrees: WorktreeRun[];
}
/**
 * One worktree run: where it works and how far it got.
 */
export interface WorktreeRun {
  runId: string;
  sessionId: string;
  state: WorktreeState;
  runStatus: string | null;
  prompt: string;
  branch: string;
  path: string;
  workspace: string;
  base: string | null;
  createdAt: number;
  usage: Usage | null;
  parentRunId?: string;
  latestRunId?: string;
}
export interface WorktreeRunParams {
  runId: string;
}
export interface WorktreeDiffResult {
  runId: string;
  branch: string;
  base: string;
  files: WorktreeFile[];
  skipped: string[];
}
/**
 * One file the run changed, judged against the workspace as it is now.
 */
export interface WorktreeFile {
  path: string;
  uri: string;
  status: "added" | "modified" | "deleted";
  binary: boolean;
  oldText: string | null;
  newText: string | null;
  patch: string;
  verdict: LandingVerdict;
  reason: string | null;
  protected: boolean;
}
export interface WorktreeApplyParams {
  runId: string;
  paths?: string[];
  edits?: WorktreeEdit[];
  alsoDiscard?: string[];
  confirmProtected?: string[];
}
/**
 * The text the user approved for one file after reviewing its hunks.
 */
export interface WorktreeEdit {
  path: string;
  newText: string;
}
export interface WorktreeApplyResult {
  runId: string;
  applied: boolean;
  files: string[];
  conflicts: WorktreeFile[];
  checkpointId: string | null;
  discarded: string[];
}
export interface WorktreeDiscardResult {
  runId: string;
  state: WorktreeState;
}
export interface WorktreeKeepResult {
  runId: string;
  branch: string;
  state: WorktreeState;
}
/**
 * `uris`: the files to report (`null`: every file the editor has problems for).
 * `after`: versions from an earlier answer, by uri; the client answers once each of those
 * files' diagnostics changed since (or after `waitMs` milliseconds, whichever comes first).
 */
export interface EditorDiagnosticsParams {
  uris: string[] | null;
  after?: {
    [k: string]: number | undefined;
  };
  waitMs: number;
}
export interface EditorDiagnosticsResult {
  files?: FileDiagnosticsItem[];
}
export interface FileDiagnosticsItem {
  uri: string;
  version?: number;
  diagnostics?: LspDiagnostic[];
}
/**
 * LSP `Diagnostic` (the fields lovia reads).
 */
export interface LspDiagnostic {
  range: Range;
  severity?: number;
  code?: number | string;
  source?: string;
  message: string;
}
/**
 * Definitions, references or implementations of the symbol at `position`.
 */
export interface EditorLocationsParams {
  kind: "definition" | "references" | "implementation";
  textDocument: TextDocumentId;
  position: SentPosition;
}
export interface TextDocumentId {
  uri: string;
}
/**
 * An LSP position the server sends: 0-based line, UTF-16 `character`.
 */
export interface SentPosition {
  line: number;
  character: number;
}
export interface EditorLocationsResult {
  locations?: LspLocation[];
  handled?: boolean;
}
/**
 * LSP `Location` (a client converts a `LocationLink` to `{uri: targetUri,
 * range: targetSelectionRange}`).
 */
export interface LspLocation {
  uri: string;
  range: Range;
}
/**
 * A file's outline (`textDocument`) or a workspace search (`query`): one of them.
 */
export interface EditorSymbolsParams {
  textDocument?: TextDocumentId;
  query?: string;
}
export interface EditorSymbolsResult {
  symbols?: (LspDocumentSymbol | LspSymbolInformation)[];
  handled?: boolean;
}
/**
 * LSP `DocumentSymbol` (hierarchical).
 */
export interface LspDocumentSymbol {
  name: string;
  kind: number;
  range: Range;
  selectionRange: Range;
  detail?: string;
  children?: LspDocumentSymbol[];
}
/**
 * LSP `SymbolInformation` (flat; a client sends a `WorkspaceSymbol` whose location has
 * no range with an empty range at the file's start).
 */
export interface LspSymbolInformation {
  name: string;
  kind: number;
  location: LspLocation;
  containerName?: string;
}
/**
 * `initialize` result: `capabilities.experimental.lovia`
 */
export interface ServerCapabilities {
  protocolVersion: number;
  methods: string[];
  eventKinds: string[];
  editModes: EditMode[];
  version: string;
}
/**
 * `initialize.initializationOptions.lovia`
 */
export interface InitOptions {
  protocolVersion?: number;
  client?: string;
  approvals?: "events" | "showMessageRequest";
  editMode?: "auto" | "server" | "workspaceEdit";
  progress?: boolean;
  stateDir?: string;
  trusted?: boolean;
  editorIntel?: EditorIntelOptions;
}
/**
 * `initializationOptions.lovia.editorIntel`: which `lovia/editor/*` requests the
 * client answers (a missing object: none).
 */
export interface EditorIntelOptions {
  diagnostics?: boolean;
  locations?: boolean;
  symbols?: boolean;
}
/**
 * the `lovia` configuration section
 */
export interface LoviaSettings {
  model?: string;
  permissions?: PermissionSettings;
  agent?: string;
  mcpServers?: {
    [k: string]: StdioMCPServerSetting | HttpMCPServerSetting | undefined;
  };
  mcpIdleTimeoutSeconds?: number;
  subagents?: SubagentSettings;
  worktrees?: WorktreeSettings;
  maxTurns?: number;
  approvalTimeoutSeconds?: number;
  editMode?: "auto" | "server" | "workspaceEdit";
  restorePoints?: RestorePointSettings;
  modelPrices?: {
    [k: string]: ModelPriceSetting | undefined;
  };
  sandbox?: SandboxSettings;
  diagnosticsAfterEdits?: boolean;
  promptCaching?: boolean;
  promptCacheTtl?: "5m" | "1h";
  providerOptions?: {
    [k: string]:
      | {
          [k: string]: unknown | undefined;
        }
      | undefined;
  };
}
export interface PermissionSettings {
  preset?: "readonly" | "coding" | "trusted";
  write?: "allow" | "ask" | "deny";
  pathRules?: PathRuleSetting[];
  commandRules?: CommandRuleSetting[];
  deniedPaths?: string[];
  protectedPaths?: string[];
  readOnlyCommands?: boolean;
}
export interface PathRuleSetting {
  pattern: string;
  read?: "allow" | "ask" | "deny";
  write?: "allow" | "ask" | "deny";
}
export interface CommandRuleSetting {
  pattern: string;
  decision: "allow" | "ask" | "deny";
}
/**
 * A local server: `{command, args?, env?, cwd?}`.
 */
export interface StdioMCPServerSetting {
  includeTools?: string[];
  excludeTools?: string[];
  defer?: boolean;
  needsApproval?: boolean;
  approvedTools?: string[];
  timeout?: number;
  connectTimeout?: number;
  disabled?: boolean;
  type?: "stdio";
  command: string;
  args?: string[];
  env?: {
    [k: string]: string | undefined;
  };
  cwd?: string;
}
/**
 * A remote server on streamable HTTP: `{url, headers?}`.
 */
export interface HttpMCPServerSetting {
  includeTools?: string[];
  excludeTools?: string[];
  defer?: boolean;
  needsApproval?: boolean;
  approvedTools?: string[];
  timeout?: number;
  connectTimeout?: number;
  disabled?: boolean;
  type?: "http";
  url: string;
  headers?: {
    [k: string]: string | undefined;
  };
}
/**
 * `lovia.subagents`: background children of the built-in agent, as child runs.
 */
export interface SubagentSettings {
  enabled?: boolean;
  maxConcurrent?: number;
  maxTurns?: number;
  maxTotalTokens?: number | null;
  maxSeconds?: number | null;
}
/**
 * `lovia.worktrees`: runs with `isolation: "worktree"` (docs/worktrees.md).
 */
export interface WorktreeSettings {
  maxConcurrent?: number;
}
/**
 * `lovia.restorePoints`: snapshots of the workspace before each turn that may write.
 *
 * Named as it is: the editor setting that becomes
 * `lovia.workspace.restore_points.RestorePointSettings`.
 */
export interface RestorePointSettings {
  enabled?: boolean;
  maxStoreMB?: number;
  maxFileMB?: number;
}
/**
 * A model's price in USD per million tokens (cached reads and writes default to input).
 */
export interface ModelPriceSetting {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}
/**
 * `lovia.sandbox`: how shell commands of the server's runs are confined (bubblewrap).
 */
export interface SandboxSettings {
  enabled?: "auto" | "on" | "off";
  network?: "allow" | "ask" | "deny";
  allowedDomains?: string[];
}

/** Every event kind, in the order of the protocol's `LoviaEvent` union. */
export const EVENT_KIND_LIST = [
  "run.started",
  "user.message",
  "message.delta",
  "reasoning.delta",
  "message.completed",
  "output.discarded",
  "model.retrying",
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
  "checkpoint.created",
  "subagent.started",
  "subagent.finished",
  "mcp.status",
  "run.finished",
] as const;
