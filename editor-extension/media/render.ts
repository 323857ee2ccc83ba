import type { ChatViewState, PendingSteer } from "../src/chat/messages";
import type {
  ApprovalItem,
  AssistantItem,
  NoticeItem,
  QuestionItem,
  ReasoningItem,
  RunView,
  ToolItem,
  TranscriptItem,
  UserItem,
} from "../src/protocol/runView";
import type { FileDiff, SessionSummary, ToolContent } from "../src/protocol/types";
import { h, htmlBlock, icon } from "./dom";
import { ICONS, TOOL_ICONS } from "./icons";
import { lineDiff, withContext } from "./lineDiff";
import { renderMarkdown } from "./markdown";

/** UI-only state kept by the webview (what is expanded). */
export interface UiMemory {
  openDetails: Set<string>;
}

const STATUS_LABEL: Record<string, string> = {
  running: "running",
  awaiting: "awaiting approval",
  completed: "done",
  failed: "failed",
  declined: "declined",
  cancelled: "cancelled",
  interrupted: "interrupted",
};

const OUTCOME_LABEL: Record<string, string> = {
  allowed: "Allowed",
  rejected: "Rejected",
  cancelled: "Cancelled",
  timed_out: "Timed out",
};

export function formatTokens(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 10_000) return `${Math.round(n / 1000)}k`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}k`;
  return String(n);
}

function basename(p: string): string {
  const parts = p.split(/[\\/]/);
  return parts[parts.length - 1] || p;
}

function details(key: string, memory: UiMemory, summary: Node[], body: Node[], className = ""): HTMLDetailsElement {
  const el = h("details", { class: className, "data-key": key, open: memory.openDetails.has(key) }, h("summary", {}, ...summary), ...body);
  el.addEventListener("toggle", () => {
    if (el.open) memory.openDetails.add(key);
    else memory.openDetails.delete(key);
  });
  return el;
}

// ---------------------------------------------------------------------------
// Transcript items

function renderUser(item: UserItem): HTMLElement {
  return h(
    "article",
    { class: `msg msg-user${item.source === "steer" ? " msg-steer" : ""}`, "aria-label": item.source === "steer" ? "Steer message" : "Your message" },
    item.source === "steer" ? h("div", { class: "msg-label" }, icon(ICONS.steer), "steer") : null,
    h("div", { class: "msg-text" }, item.text),
  );
}

function renderAssistant(item: AssistantItem): HTMLElement {
  const el = h("article", { class: `msg msg-assistant${item.streaming ? " streaming" : ""}`, "aria-label": "lovia" });
  el.append(htmlBlock("markdown", renderMarkdown(item.text)));
  if (item.streaming) el.append(h("span", { class: "cursor", "aria-hidden": "true" }));
  return el;
}

function renderReasoning(run: RunView, item: ReasoningItem, memory: UiMemory): HTMLElement {
  return details(
    `${run.runId}:${item.id}`,
    memory,
    [h("span", { class: "reasoning-label" }, item.streaming ? "Thinking…" : "Reasoning")],
    [h("div", { class: "reasoning-text" }, item.text)],
    "reasoning",
  );
}

function renderLocations(locations: ToolItem["locations"]): HTMLElement | null {
  if (locations.length === 0) return null;
  return h(
    "div",
    { class: "locations" },
    locations.map((loc) =>
      h(
        "button",
        {
          class: "link location",
          type: "button",
          "data-action": "openLocation",
          "data-uri": loc.uri,
          "data-line": loc.line,
          title: loc.line ? `${loc.path}:${loc.line}` : loc.path,
        },
        loc.line ? `${basename(loc.path)}:${loc.line}` : basename(loc.path),
      ),
    ),
  );
}

export function renderDiff(diff: Pick<FileDiff, "path" | "oldText" | "newText">, maxLines = 80): HTMLElement {
  const lines = withContext(lineDiff(diff.oldText, diff.newText));
  const rows: HTMLElement[] = [];
  for (const line of lines.slice(0, maxLines)) {
    if (line === null) rows.push(h("div", { class: "diff-line diff-gap" }, "⋯"));
    else {
      const cls = line.op === "+" ? "diff-add" : line.op === "-" ? "diff-del" : "diff-ctx";
      rows.push(h("div", { class: `diff-line ${cls}` }, h("span", { class: "diff-op", "aria-hidden": "true" }, line.op), line.text));
    }
  }
  if (lines.length > maxLines) rows.push(h("div", { class: "diff-line diff-gap" }, `… ${lines.length - maxLines} more lines`));
  const added = lines.filter((l) => l?.op === "+").length;
  const removed = lines.filter((l) => l?.op === "-").length;
  return h(
    "figure",
    { class: "diff", "aria-label": `Diff of ${diff.path}` },
    h(
      "figcaption",
      {},
      h("span", { class: "diff-path" }, basename(diff.path)),
      diff.oldText === null ? h("span", { class: "badge" }, "new file") : null,
      h("span", { class: "diff-stat" }, h("span", { class: "diff-add-count" }, `+${added}`), " ", h("span", { class: "diff-del-count" }, `−${removed}`)),
    ),
    h("div", { class: "diff-body" }, rows),
  );
}

function renderContent(content: ToolContent[]): HTMLElement[] {
  return content.map((c) => {
    if (c.type === "diff") return renderDiff(c);
    return h("pre", { class: "tool-text" }, c.text);
  });
}

function renderTool(run: RunView, item: ToolItem, memory: UiMemory): HTMLElement {
  const awaiting =
    item.status === "running" &&
    run.items.some((i) => i.type === "approval" && i.toolCallId === item.toolCallId && i.state === "pending");
  const status = awaiting ? "awaiting" : item.status;
  const input = item.input === undefined ? "" : JSON.stringify(item.input, null, 2);
  const output =
    item.output.length > 0
      ? h(
          "pre",
          { class: "tool-output", "aria-label": "Output" },
          item.outputTruncated ? h("span", { class: "muted" }, "… earlier output dropped\n") : null,
          item.output.map((c) => h("span", { class: c.stream === "stderr" ? "stderr" : "stdout" }, c.text)),
        )
      : null;
  const resultBody = renderContent(item.content);
  return h(
    "article",
    { class: `tool tool-${item.toolKind} tool-status-${status}${item.isError ? " tool-error" : ""}`, "aria-label": `Tool: ${item.title || item.name}` },
    h(
      "header",
      { class: "tool-head" },
      h("span", { class: "tool-icon", title: item.toolKind }, icon(TOOL_ICONS[item.toolKind] ?? TOOL_ICONS.other)),
      h("span", { class: "tool-title" }, item.title || item.name),
      item.server ? h("span", { class: "badge tool-server", title: `Served by the MCP server ${item.server}` }, item.server) : null,
      h("span", { class: `tool-status status-${status}` }, status === "running" ? h("span", { class: "spinner", "aria-hidden": "true" }) : null, STATUS_LABEL[status] ?? status),
    ),
    renderLocations(item.locations),
    item.toolKind === "execute" && typeof (item.input as { command?: unknown })?.command === "string"
      ? h("pre", { class: "tool-command" }, h("span", { class: "prompt", "aria-hidden": "true" }, "$ "), (item.input as { command: string }).command)
      : null,
    output,
    resultBody.length > 0
      ? item.content.some((c) => c.type === "diff")
        ? h("div", { class: "tool-result" }, resultBody)
        : details(`${run.runId}:${item.id}:result`, memory, [h("span", {}, item.isError ? "Error" : "Result")], resultBody, "tool-result")
      : null,
    input && input !== "{}"
      ? details(`${run.runId}:${item.id}:input`, memory, [h("span", {}, "Input")], [h("pre", { class: "tool-input" }, input)], "tool-input-details")
      : null,
  );
}

function renderApproval(run: RunView, item: ApprovalItem): HTMLElement {
  const pending = item.state === "pending";
  const el = h(
    "article",
    {
      class: `approval approval-${item.state}`,
      role: pending ? "alertdialog" : undefined,
      "aria-label": `Approval: ${item.title}`,
      "data-approval-id": item.approvalId,
    },
    h(
      "header",
      { class: "approval-head" },
      icon(ICONS.shield),
      h("span", {}, pending ? "Approval needed" : "Approval"),
      h("span", { class: "badge" }, item.action),
      item.requester ? h("span", { class: "approval-requester", title: "A subagent asks" }, `from ${item.requester.taskId} · ${item.requester.name}`) : null,
    ),
    h("div", { class: "approval-title" }, item.title),
    item.detail && pending ? h("div", { class: "approval-detail" }, item.detail) : null,
    item.command && pending ? h("pre", { class: "tool-command" }, h("span", { class: "prompt", "aria-hidden": "true" }, "$ "), item.command) : null,
    // Once decided, the card shrinks to its outcome: the tool card shows the result.
    pending && item.paths.length > 0 && !item.diff ? h("ul", { class: "approval-paths" }, item.paths.map((p) => h("li", {}, p))) : null,
    pending && item.diff ? item.diff.map((d) => renderDiff(d, 40)) : null,
  );
  if (pending) {
    if (item.diff && item.diff.length > 0) {
      el.append(
        h(
          "button",
          { class: "link review", type: "button", "data-action": "openDiff", "data-run-id": run.runId, "data-approval-id": item.approvalId },
          icon(ICONS.diff),
          "Review in diff editor",
        ),
      );
    }
    el.append(
      h("input", {
        class: "reason",
        type: "text",
        placeholder: "Reason, if you reject (optional)",
        "aria-label": "Reason for rejecting",
        "data-reason-for": item.approvalId,
      }),
    );
    el.append(
      h(
        "div",
        { class: "actions" },
        item.options.map((o, i) =>
          h(
            "button",
            {
              type: "button",
              class: o.decision.startsWith("allow") ? (i === 0 ? "primary" : "secondary") : "secondary danger",
              "data-action": "approve",
              "data-run-id": run.runId,
              "data-approval-id": item.approvalId,
              "data-decision": o.decision,
            },
            o.label,
          ),
        ),
      ),
    );
  } else {
    const by = item.by ? ` by ${item.by}` : "";
    el.append(h("div", { class: `approval-outcome outcome-${item.state}` }, `${OUTCOME_LABEL[item.state] ?? item.state}${by}`));
  }
  return el;
}

function renderQuestion(run: RunView, item: QuestionItem): HTMLElement {
  const answered = item.answer !== undefined;
  const el = h(
    "article",
    { class: `question${answered ? " answered" : ""}`, role: answered ? undefined : "alertdialog", "aria-label": "Question from the agent" },
    h(
      "header",
      { class: "approval-head" },
      icon(ICONS.question),
      h("span", {}, "Question"),
      item.requester ? h("span", { class: "approval-requester" }, `from ${item.requester.taskId} · ${item.requester.name}`) : null,
    ),
    h("div", { class: "question-text" }, item.text),
  );
  if (answered) {
    el.append(h("div", { class: "answer" }, item.answer ?? ""));
    return el;
  }
  if (item.choices && item.choices.length > 0) {
    el.append(
      h(
        "div",
        { class: "actions" },
        item.choices.map((c) =>
          h("button", { type: "button", class: "secondary", "data-action": "answer", "data-run-id": run.runId, "data-question-id": item.questionId, "data-answer": c }, c),
        ),
      ),
    );
  }
  el.append(
    h(
      "form",
      { class: "answer-form", "data-action": "answerForm", "data-run-id": run.runId, "data-question-id": item.questionId },
      h("input", { type: "text", class: "answer-input", placeholder: "Your answer", "aria-label": "Your answer" }),
      h("button", { type: "submit", class: "primary" }, "Answer"),
    ),
  );
  return el;
}

function renderNotice(run: RunView, item: NoticeItem): HTMLElement {
  const el = h(
    "div",
    { class: `notice notice-${item.level}`, role: item.level === "error" ? "alert" : "status" },
    h("span", {}, item.text),
    item.hint ? h("div", { class: "hint" }, item.hint) : null,
  );
  return el;
}

export function renderItem(run: RunView, item: TranscriptItem, memory: UiMemory): HTMLElement {
  switch (item.type) {
    case "user":
      return renderUser(item);
    case "assistant":
      return renderAssistant(item);
    case "reasoning":
      return renderReasoning(run, item, memory);
    case "tool":
      return renderTool(run, item, memory);
    case "approval":
      return renderApproval(run, item);
    case "question":
      return renderQuestion(run, item);
    case "notice":
      return renderNotice(run, item);
  }
}

/** The footer under a finished run (resume offer). */
export function renderRunFooter(run: RunView): HTMLElement | null {
  if (run.status === "running" || !run.resumable) return null;
  return h(
    "div",
    { class: "run-footer" },
    h("button", { type: "button", class: "secondary", "data-action": "resume", "data-run-id": run.runId }, icon(ICONS.play), "Resume run"),
  );
}

// ---------------------------------------------------------------------------
// Chrome around the transcript

export function renderSessions(state: ChatViewState): HTMLElement {
  const list = h("ul", { class: "session-list", "aria-label": "Sessions" });
  if (state.sessions.length === 0) list.append(h("li", { class: "muted empty" }, "No sessions yet."));
  for (const s of state.sessions) list.append(renderSessionRow(s, s.sessionId === state.sessionId));
  return list;
}

function renderSessionRow(s: SessionSummary, current: boolean): HTMLElement {
  return h(
    "li",
    { class: `session${current ? " current" : ""}${s.resumable ? " resumable" : ""}` },
    h(
      "button",
      { type: "button", class: "session-open", "data-action": "selectSession", "data-session-id": s.sessionId, "aria-current": current ? "true" : undefined },
      h("span", { class: "session-title" }, s.title || "(untitled)"),
      s.resumable ? h("span", { class: "badge badge-warn" }, "resumable") : s.lastRunStatus ? h("span", { class: "session-status" }, STATUS_LABEL[s.lastRunStatus] ?? s.lastRunStatus) : null,
    ),
    s.resumable && s.lastRunId
      ? h("button", { type: "button", class: "icon-button", title: "Resume", "aria-label": `Resume ${s.title}`, "data-action": "resume", "data-run-id": s.lastRunId }, icon(ICONS.play))
      : null,
    h("button", { type: "button", class: "icon-button", title: "Delete session", "aria-label": `Delete ${s.title}`, "data-action": "deleteSession", "data-session-id": s.sessionId }, icon(ICONS.trash)),
  );
}

export function renderTodos(run: RunView | undefined): HTMLElement | null {
  if (!run || run.todos.length === 0) return null;
  const done = run.todos.filter((t) => t.status === "completed").length;
  return h(
    "section",
    { class: "todos", "aria-label": "Todo list" },
    h("div", { class: "section-title" }, `Todo · ${done}/${run.todos.length}`),
    h(
      "ol",
      {},
      run.todos.map((t) =>
        h(
          "li",
          { class: `todo todo-${t.status}` },
          h("span", { class: "todo-box", "aria-hidden": "true" }, t.status === "completed" ? "✓" : t.status === "in_progress" ? "▸" : "○"),
          h("span", { class: "todo-text" }, t.status === "in_progress" && t.activeForm ? t.activeForm : t.content),
          h("span", { class: "visually-hidden" }, ` (${t.status.replace("_", " ")})`),
        ),
      ),
    ),
  );
}

export function renderUsage(run: RunView | undefined): HTMLElement | null {
  const u = run?.usage;
  if (!u) return null;
  const tokens = `↑${formatTokens(u.inputTokens)} ↓${formatTokens(u.outputTokens)}`;
  const title = `input ${u.inputTokens} · output ${u.outputTokens} tokens`;
  const window = typeof u.contextWindow === "number" && u.contextWindow > 0 ? u.contextWindow : undefined;
  if (window === undefined) {
    // The model's context window is unknown: tokens only, no meter and no "null".
    const context = typeof u.contextTokens === "number" && u.contextTokens > 0 ? `${formatTokens(u.contextTokens)} context · ` : "";
    return h("div", { class: "usage", title }, h("span", { class: "usage-text" }, `${context}${tokens}`));
  }
  const pct = Math.min(100, Math.round((u.contextTokens / window) * 100));
  const fill = h("div", { class: `meter-fill${pct >= 80 ? " high" : ""}`, "data-pct": pct });
  // CSSOM (not a style attribute), so the strict CSP allows it.
  fill.style.width = `${pct}%`;
  return h(
    "div",
    { class: "usage", title },
    h(
      "div",
      { class: "meter", role: "meter", "aria-label": "Context used", "aria-valuemin": 0, "aria-valuemax": window, "aria-valuenow": u.contextTokens },
      fill,
    ),
    h("span", { class: "usage-text" }, `${formatTokens(u.contextTokens)} / ${formatTokens(window)} context · ${tokens}`),
  );
}

export function renderSteers(steers: PendingSteer[]): HTMLElement | null {
  if (steers.length === 0) return null;
  return h(
    "ul",
    { class: "steers", "aria-label": "Queued steer messages" },
    steers.map((s) =>
      h(
        "li",
        { class: "steer" },
        icon(ICONS.steer),
        h("span", { class: "steer-text" }, s.text),
        h("span", { class: "muted" }, s.withdrawing ? "withdrawing…" : "queued"),
        h(
          "button",
          { type: "button", class: "link", "data-action": "unsteer", "data-run-id": s.runId, "data-message-id": s.messageId, disabled: s.withdrawing === true },
          "Withdraw",
        ),
      ),
    ),
  );
}
