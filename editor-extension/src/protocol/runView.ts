import type {
  ApprovalAction,
  ApprovalBy,
  ApprovalChoice,
  ApprovalOption,
  ApprovalOutcome,
  ContextSummary,
  EventOf,
  FinalStatus,
  FileDiff,
  Location,
  LoviaEvent,
  RunError,
  RunStatus,
  SubagentRef,
  TodoItem,
  ToolContent,
  ToolKind,
  ToolStatus,
} from "./types";

/**
 * A run folded into a render model: plain JSON, so it can be posted to a webview as is.
 * Every item carries `rev`, bumped whenever the item changes, so a renderer can skip
 * unchanged items.
 */
export interface RunView {
  runId: string;
  sessionId: string;
  parentRunId?: string;
  status: RunStatus;
  prompt?: string;
  model?: string | null;
  agent?: string | null;
  resumable: boolean;
  error?: RunError;
  startedAt?: number;
  finishedAt?: number;
  lastSeq: number;
  items: TranscriptItem[];
  todos: TodoItem[];
  usage?: UsageView;
  /** Short description of what the run is doing now (for status bar / progress). */
  activity?: string;
  /** The restore point of the files taken before this turn's first change (`checkpoint.created`). */
  checkpoint?: CheckpointRef;
  /** Set on a subagent's run: its task id and name (it also has `parentRunId`). */
  subagent?: SubagentRef;
  /** The subagents this run spawned, in spawn order. */
  children: ChildRef[];
  rev: number;
}

/** Where "Restore to here" goes back to. */
export interface CheckpointRef {
  checkpointId: string;
  turnIndex: number;
  label: string;
  createdAt: number;
}

/** A subagent as its parent's stream announces it (`subagent.started` / `.finished`). */
export interface ChildRef {
  runId: string;
  sessionId: string;
  taskId: string;
  name: string;
  prompt: string;
  /** The `spawn_subagent` call it answers: the panel nests the child under that card. */
  toolCallId: string | null;
  status: "running" | FinalStatus;
  summary?: string;
}

export interface UsageView {
  inputTokens: number;
  outputTokens: number;
  contextTokens: number;
  contextWindow: number | null;
  /** Of `inputTokens`: served from the provider's prompt cache, and written to it. */
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  /** The last model call's prompt and what of it came from the cache. */
  turn?: { inputTokens: number; cacheReadTokens: number };
  /** USD, when the model's price is known. */
  costUsd?: number;
  /** USD: the session's runs so far, this one included (the server's sum). */
  sessionCostUsd?: number;
}

/** The usage fields the wire's `Usage` and `usage.updated` share. */
type WireUsage = EventOf<"usage.updated"> | EventOf<"run.finished">["usage"];

/** Cache counts, the last turn and the costs of a wire usage, onto `view`. */
function cacheAndCost(view: UsageView, u: WireUsage): UsageView {
  if (typeof u.cacheReadTokens === "number") view.cacheReadTokens = u.cacheReadTokens;
  if (typeof u.cacheWriteTokens === "number") view.cacheWriteTokens = u.cacheWriteTokens;
  if (u.turn) view.turn = { inputTokens: u.turn.inputTokens, cacheReadTokens: u.turn.cacheReadTokens };
  if (typeof u.costUsd === "number") view.costUsd = u.costUsd;
  if (typeof u.sessionCostUsd === "number") view.sessionCostUsd = u.sessionCostUsd;
  return view;
}

interface ItemBase {
  id: string;
  rev: number;
}

export interface UserItem extends ItemBase {
  type: "user";
  text: string;
  source: EventOf<"user.message">["source"];
  /** What was attached to the prompt (the chips), as the server read it. */
  context?: ContextSummary[];
}

export interface AssistantItem extends ItemBase {
  type: "assistant";
  messageId: string;
  text: string;
  streaming: boolean;
}

export interface ReasoningItem extends ItemBase {
  type: "reasoning";
  messageId: string;
  text: string;
  streaming: boolean;
}

/** A chunk of streamed tool output, as `tool.update` carries it. */
export type OutputChunk = EventOf<"tool.update">["output"];

export interface ToolItem extends ItemBase {
  type: "tool";
  toolCallId: string;
  name: string;
  toolKind: ToolKind;
  title: string;
  input: unknown;
  locations: Location[];
  output: OutputChunk[];
  outputTruncated: boolean;
  /** Characters of output ever appended (the kept tail may be shorter): lets a view send only what is new. */
  outputTotal: number;
  status: "running" | ToolStatus;
  content: ToolContent[];
  isError: boolean;
  /** The MCP server serving the tool, for an MCP tool. */
  server?: string;
}

export interface ApprovalItem extends ItemBase {
  type: "approval";
  approvalId: string;
  toolCallId: string;
  action: ApprovalAction;
  title: string;
  detail: string;
  paths: string[];
  command?: string;
  diff?: FileDiff[];
  options: ApprovalOption[];
  state: "pending" | ApprovalOutcome;
  decision?: ApprovalChoice;
  by?: ApprovalBy;
  /** Whose request it is, when a subagent asks. */
  requester?: SubagentRef;
  /** Approved with the user's changes (some hunks, or an edited proposal). */
  edited?: boolean;
  /** Set when the call changes editor, git or agent configuration (protected paths). */
  warning?: string;
}

export interface QuestionItem extends ItemBase {
  type: "question";
  questionId: string;
  text: string;
  choices?: string[];
  answer?: string;
  requester?: SubagentRef;
}

export interface NoticeItem extends ItemBase {
  type: "notice";
  level: "info" | "error";
  text: string;
  hint?: string;
}

export type TranscriptItem =
  | UserItem
  | AssistantItem
  | ReasoningItem
  | ToolItem
  | ApprovalItem
  | QuestionItem
  | NoticeItem;

const FINAL_STATUSES = new Set<RunStatus>(["completed", "failed", "cancelled", "interrupted"]);

/** Cap on streamed tool output kept per tool call (the tail is kept). */
export const MAX_TOOL_OUTPUT_CHARS = 100_000;

export function createRunView(runId: string, sessionId: string): RunView {
  return { runId, sessionId, status: "running", resumable: false, lastSeq: 0, items: [], todos: [], children: [], rev: 0 };
}

function bump(run: RunView, item?: ItemBase): void {
  run.rev += 1;
  if (item) item.rev = run.rev;
}

function find<T extends TranscriptItem["type"]>(
  run: RunView,
  type: T,
  id: string,
): Extract<TranscriptItem, { type: T }> | undefined {
  return run.items.find((i) => i.type === type && i.id === id) as Extract<TranscriptItem, { type: T }> | undefined;
}

function push<T extends TranscriptItem>(run: RunView, item: Omit<T, "rev">): T {
  const full = { ...item, rev: 0 } as T;
  run.items.push(full);
  bump(run, full);
  return full;
}

function notice(run: RunView, id: string, level: NoticeItem["level"], text: string, hint?: string): void {
  const item: Omit<NoticeItem, "rev"> = { type: "notice", id, level, text };
  if (hint !== undefined) item.hint = hint;
  push<NoticeItem>(run, item);
}

function pendingApprovals(run: RunView): ApprovalItem[] {
  return run.items.filter((i): i is ApprovalItem => i.type === "approval" && i.state === "pending");
}

function assistantFor(run: RunView, messageId: string): AssistantItem {
  const existing = find(run, "assistant", messageId);
  if (existing) return existing;
  return push<AssistantItem>(run, { type: "assistant", id: messageId, messageId, text: "", streaming: true });
}

function reasoningFor(run: RunView, messageId: string): ReasoningItem {
  const id = `reasoning:${messageId}`;
  const existing = find(run, "reasoning", id);
  if (existing) return existing;
  return push<ReasoningItem>(run, { type: "reasoning", id, messageId, text: "", streaming: true });
}

/** Append streamed output, merging with the last chunk of the same stream and keeping the tail. */
export function appendOutput(tool: Pick<ToolItem, "output" | "outputTruncated" | "outputTotal">, chunk: OutputChunk): void {
  tool.outputTotal = (tool.outputTotal ?? 0) + chunk.text.length;
  const last = tool.output[tool.output.length - 1];
  if (last && last.stream === chunk.stream) last.text += chunk.text;
  else tool.output.push({ stream: chunk.stream, text: chunk.text });
  let total = tool.output.reduce((n, c) => n + c.text.length, 0);
  while (total > MAX_TOOL_OUTPUT_CHARS && tool.output.length > 0) {
    const first = tool.output[0]!;
    const excess = total - MAX_TOOL_OUTPUT_CHARS;
    if (first.text.length <= excess) {
      tool.output.shift();
      total -= first.text.length;
    } else {
      first.text = first.text.slice(excess);
      total -= excess;
    }
    tool.outputTruncated = true;
  }
}

function describeActivity(run: RunView): string | undefined {
  if (run.status !== "running") return undefined;
  if (pendingApprovals(run).length > 0) return "waiting for approval";
  const question = run.items.find((i) => i.type === "question" && i.answer === undefined);
  if (question) return "waiting for your answer";
  for (let i = run.items.length - 1; i >= 0; i--) {
    const item = run.items[i]!;
    if (item.type === "tool" && item.status === "running") return item.title || item.name;
  }
  const last = run.items[run.items.length - 1];
  if (last?.type === "notice" && last.id.startsWith("retry:")) return "retrying the model call";
  return "thinking";
}

/**
 * Fold one event into the run view (in place). The caller guarantees `seq` order and
 * de-duplication (see {@link EventStore}); this function is otherwise total: unknown
 * kinds and events for unknown ids are tolerated.
 */
export function applyEvent(run: RunView, event: LoviaEvent): void {
  run.lastSeq = Math.max(run.lastSeq, event.seq);
  if (event.parentRunId !== undefined) run.parentRunId = event.parentRunId;
  switch (event.kind) {
    case "run.started":
      onRunStarted(run, event);
      break;
    case "user.message": {
      if (!find(run, "user", event.messageId)) {
        const item: Omit<UserItem, "rev"> = { type: "user", id: event.messageId, text: event.text, source: event.source };
        if (event.context && event.context.length > 0) item.context = event.context;
        push<UserItem>(run, item);
      }
      break;
    }
    case "message.delta": {
      const item = assistantFor(run, event.messageId);
      item.text += event.text;
      item.streaming = true;
      bump(run, item);
      break;
    }
    case "reasoning.delta": {
      const item = reasoningFor(run, event.messageId);
      item.text += event.text;
      bump(run, item);
      break;
    }
    case "message.completed": {
      const item = assistantFor(run, event.messageId);
      item.text = event.text;
      item.streaming = false;
      bump(run, item);
      const reasoning = find(run, "reasoning", `reasoning:${event.messageId}`);
      if (reasoning && reasoning.streaming) {
        reasoning.streaming = false;
        bump(run, reasoning);
      }
      // An assistant message without text (only tool calls) renders nothing.
      if (item.text === "") run.items = run.items.filter((i) => i !== item);
      break;
    }
    case "output.discarded": {
      const ids = new Set([event.messageId, `reasoning:${event.messageId}`]);
      run.items = run.items.filter((i) => !((i.type === "assistant" || i.type === "reasoning") && ids.has(i.id)));
      bump(run);
      break;
    }
    case "tool.call": {
      const existing = find(run, "tool", event.toolCallId);
      const base = {
        name: event.name,
        toolKind: event.toolKind,
        title: event.title,
        input: event.input,
        locations: event.locations ?? [],
        ...(event.server ? { server: event.server } : {}),
      };
      if (existing) {
        Object.assign(existing, base);
        bump(run, existing);
      } else {
        push<ToolItem>(run, {
          type: "tool",
          id: event.toolCallId,
          toolCallId: event.toolCallId,
          ...base,
          output: [],
          outputTruncated: false,
          outputTotal: 0,
          status: "running",
          content: [],
          isError: false,
        });
      }
      break;
    }
    case "tool.update": {
      const tool = find(run, "tool", event.toolCallId);
      if (tool) {
        appendOutput(tool, event.output);
        bump(run, tool);
      }
      break;
    }
    case "tool.result": {
      const tool = find(run, "tool", event.toolCallId);
      if (tool) {
        tool.status = event.status;
        tool.content = event.content ?? [];
        tool.isError = event.isError;
        bump(run, tool);
      }
      break;
    }
    case "approval.requested": {
      onApprovalRequested(run, event);
      const tool = find(run, "tool", event.toolCallId);
      if (tool) bump(run, tool); // its card shows "awaiting approval"
      break;
    }
    case "approval.resolved": {
      const approval = find(run, "approval", event.approvalId);
      if (approval) {
        approval.state = event.outcome;
        approval.by = event.by;
        if (event.decision !== undefined) approval.decision = event.decision;
        if (event.edited) approval.edited = true;
        bump(run, approval);
        const tool = find(run, "tool", approval.toolCallId);
        if (tool) bump(run, tool);
      }
      break;
    }
    case "question.requested": {
      const existing = find(run, "question", event.questionId);
      if (existing) {
        existing.text = event.text;
        if (event.choices !== undefined) existing.choices = event.choices;
        delete existing.answer;
        bump(run, existing);
      } else {
        const item: Omit<QuestionItem, "rev"> = {
          type: "question",
          id: event.questionId,
          questionId: event.questionId,
          text: event.text,
        };
        if (event.choices !== undefined) item.choices = event.choices;
        if (event.subagent) item.requester = event.subagent;
        push<QuestionItem>(run, item);
      }
      break;
    }
    case "question.answered": {
      const question = find(run, "question", event.questionId);
      if (question) {
        question.answer = event.answer;
        bump(run, question);
      }
      break;
    }
    case "todo.updated":
      run.todos = (event.items ?? []).map((t) => ({ ...t }));
      bump(run);
      break;
    case "handoff":
      notice(run, `handoff:${event.seq}`, "info", `Handed off from ${event.fromAgent} to ${event.toAgent}: ${event.reason}`);
      break;
    case "compaction":
      notice(
        run,
        `compaction:${event.seq}`,
        "info",
        `Context compacted: ${tokens(event.tokensBefore)} → ${tokens(event.tokensAfter)} tokens`,
      );
      break;
    case "usage.updated":
      run.usage = cacheAndCost(
        {
          inputTokens: event.inputTokens,
          outputTokens: event.outputTokens,
          // Unknown (null on the wire) reads as 0: the meter then shows no fill.
          contextTokens: event.contextTokens ?? 0,
          contextWindow: event.contextWindow ?? 0,
        },
        event,
      );
      bump(run);
      break;
    case "checkpoint.created": {
      run.checkpoint = { checkpointId: event.checkpointId, turnIndex: event.turnIndex, label: event.label, createdAt: event.createdAt };
      // The run's prompt shows "Restore to here" from now on.
      const prompt = run.items.find((i): i is UserItem => i.type === "user" && i.source === "prompt");
      bump(run, prompt);
      break;
    }
    case "subagent.started":
    case "subagent.finished":
      onSubagent(run, event);
      break;
    case "mcp.status":
      onMcpStatus(run, event);
      break;
    case "model.retrying":
      onRetrying(run, event);
      break;
    case "run.finished":
      onRunFinished(run, event);
      break;
    default:
      // Unknown kinds (a newer server) are ignored but still advance lastSeq.
      break;
  }
  run.activity = describeActivity(run);
}

function onRunStarted(run: RunView, event: EventOf<"run.started">): void {
  const wasFinished = run.status !== "running" || run.finishedAt !== undefined;
  run.status = "running";
  run.prompt = event.prompt;
  run.model = event.model;
  run.agent = event.agent;
  if (event.subagent) run.subagent = event.subagent;
  run.resumable = false;
  delete run.error;
  delete run.finishedAt;
  if (run.startedAt === undefined) run.startedAt = event.ts;
  if (event.resumed || wasFinished) notice(run, `resumed:${event.seq}`, "info", "Run resumed");
  bump(run);
}

function onSubagent(run: RunView, event: EventOf<"subagent.started"> | EventOf<"subagent.finished">): void {
  let child = run.children.find((c) => c.runId === event.childRunId);
  if (event.kind === "subagent.started") {
    const fields = {
      runId: event.childRunId,
      sessionId: event.childSessionId,
      taskId: event.taskId,
      name: event.name,
      prompt: event.prompt,
      toolCallId: event.toolCallId,
      status: "running" as const,
    };
    if (child) Object.assign(child, fields);
    else run.children.push((child = fields));
  } else if (child) {
    child.status = event.status;
    if (event.summary !== undefined) child.summary = event.summary;
  }
  const tool = child?.toolCallId ? find(run, "tool", child.toolCallId) : undefined;
  if (tool) bump(run, tool); // the spawning card shows its child
  else bump(run);
}

/** A model call failed and is tried again: one notice per message, updated at each retry. */
function onRetrying(run: RunView, event: EventOf<"model.retrying">): void {
  const seconds = Math.max(event.delayMs, 0) / 1000;
  const wait = seconds >= 10 ? `${Math.round(seconds)} s` : `${seconds.toFixed(1)} s`;
  const text = `The model call failed (${event.reason}); retrying in ${wait} (attempt ${event.attempt + 1} of ${event.maxAttempts})`;
  const id = `retry:${event.messageId}`;
  const existing = find(run, "notice", id);
  if (existing) {
    existing.text = text;
    if (event.hint) existing.hint = event.hint;
    bump(run, existing);
  } else {
    notice(run, id, "info", text, event.hint);
  }
}

/** Only what needs the user's eye: a server that failed, restarts, or is back. */
function onMcpStatus(run: RunView, event: EventOf<"mcp.status">): void {
  if (event.state === "failed") {
    const first = (event.error ?? "").split("\n")[0] ?? "";
    notice(run, `mcp:${event.seq}`, "error", `MCP server ${event.server} is unavailable: ${first}`, "The run goes on without its tools.");
  } else if (event.state === "restarting") {
    notice(run, `mcp:${event.seq}`, "info", `MCP server ${event.server} stopped; restarting it`);
  }
}

function onApprovalRequested(run: RunView, event: EventOf<"approval.requested">): void {
  const fields = {
    approvalId: event.approvalId,
    toolCallId: event.toolCallId,
    action: event.action,
    title: event.title,
    detail: event.detail,
    paths: event.paths ?? [],
    options: event.options ?? [],
    state: "pending" as const,
  };
  const existing = find(run, "approval", event.approvalId);
  let item: ApprovalItem;
  if (existing) {
    Object.assign(existing, fields);
    delete existing.decision;
    delete existing.by;
    item = existing;
    bump(run, item);
  } else {
    item = push<ApprovalItem>(run, { type: "approval", id: event.approvalId, ...fields });
  }
  if (event.command !== undefined) item.command = event.command;
  if (event.diff !== undefined) item.diff = event.diff;
  if (event.subagent) item.requester = event.subagent;
  if (event.warning) item.warning = event.warning;
  else delete item.warning;
}

function onRunFinished(run: RunView, event: EventOf<"run.finished">): void {
  run.status = event.status;
  const cost = event.usage?.costUsd;
  if (typeof cost === "number") {
    // The run's totals; the live context (and the last turn) stay as the last update left them.
    const base = run.usage ?? { inputTokens: event.usage.inputTokens, outputTokens: event.usage.outputTokens, contextTokens: 0, contextWindow: 0 };
    run.usage = cacheAndCost({ ...base }, event.usage);
  }
  run.resumable = event.resumable;
  run.finishedAt = event.ts;
  for (const item of run.items) {
    if ((item.type === "assistant" || item.type === "reasoning") && item.streaming) {
      item.streaming = false;
      bump(run, item);
    }
    if (item.type === "tool" && item.status === "running" && event.status !== "interrupted") {
      item.status = "cancelled";
      bump(run, item);
    }
  }
  if (event.error) {
    run.error = event.error;
    notice(run, `error:${event.seq}`, "error", `${event.error.type}: ${event.error.message}`, event.error.hint);
  } else if (event.status === "cancelled") {
    notice(run, `cancelled:${event.seq}`, "info", "Run cancelled");
  } else if (event.status === "interrupted") {
    notice(run, `interrupted:${event.seq}`, "info", event.resumable ? "Run interrupted — it can be resumed" : "Run interrupted");
  }
  bump(run);
}

/**
 * Mark a run whose live stream ended without `run.finished` (server restart) with the
 * status the server reports for it.
 */
export function applyReplayStatus(run: RunView, status: RunStatus): void {
  // Only an ended run changes the view: a live run waiting for approval (or being
  // cancelled) is still live, and its events say what it waits for.
  if (run.status === "running" && FINAL_STATUSES.has(status)) {
    run.status = status;
    run.resumable = status === "interrupted";
    for (const item of run.items) {
      if ((item.type === "assistant" || item.type === "reasoning") && item.streaming) {
        item.streaming = false;
        bump(run, item);
      }
    }
    if (status === "interrupted") notice(run, `interrupted:replay:${run.lastSeq}`, "info", "Run interrupted — it can be resumed");
    run.activity = describeActivity(run);
    bump(run);
  }
}

export function pendingApprovalsOf(run: RunView): ApprovalItem[] {
  return pendingApprovals(run);
}

/** A token count for a notice (`?` when the server could not count it). */
function tokens(n: number | null): string {
  return n === null ? "?" : n.toLocaleString("en-US");
}
