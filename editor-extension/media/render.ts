import type { ActiveRunView, ChromeState, PendingSteer } from "../src/chat/messages";
import type { ChangesRow, FooterRow, Row, ShownContent, ShownDiff, ShownText, ToolRow, UserRow } from "../src/chat/rows";
import type { ApprovalItem, AssistantItem, NoticeItem, QuestionItem, ReasoningItem, ToolItem, UsageView } from "../src/protocol/runView";
import type { FileDiff, SessionSummary } from "../src/protocol/types";
import { hunksOf, reviewLines, withoutHunks } from "../src/diff/hunks";
import { h, htmlBlock, icon } from "./dom";
import { ICONS, TOOL_ICONS } from "./icons";
import { decorateCode } from "./code";
import { formatCost, formatTokens } from "./format";
import { mentionIcon } from "./mentions";
import { renderMarkdown } from "./markdown";
import { renderSubagent } from "./subagents";

/** UI-only state kept by the webview (what is expanded, which hunks the reader rejected). */
export interface UiMemory {
  openDetails: Set<string>;
  /** Per approval, the ids of the hunks the reader rejected (`Hunk.id`, as in the diff editor). */
  rejectedHunks: Map<string, Set<string>>;
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

function renderUser(item: UserRow): HTMLElement {
  return h(
    "article",
    { class: `msg msg-user${item.source === "steer" ? " msg-steer" : ""}`, "aria-label": item.source === "steer" ? "Steer message" : "Your message" },
    item.source === "steer" ? h("div", { class: "msg-label" }, icon(ICONS.steer), "steer") : null,
    h("div", { class: "msg-text" }, item.text),
    item.context && item.context.length > 0
      ? h(
          "div",
          { class: "mention-chips", "aria-label": "Attached context" },
          item.context.map((c) =>
            h(
              c.kind === "problems" || c.kind === "folder" ? "span" : "button",
              {
                type: c.kind === "problems" || c.kind === "folder" ? undefined : "button",
                class: `chip chip-${c.kind}${c.truncated ? " chip-cut" : ""}${c.note && !c.truncated ? " chip-note" : ""}`,
                "data-action": c.kind === "problems" || c.kind === "folder" ? undefined : "openLocation",
                "data-uri": c.uri,
                "data-line": c.line,
                title: [c.label, c.note].filter(Boolean).join(" — "),
              },
              mentionIcon(c.kind),
              h("span", { class: "chip-label" }, c.label),
              c.truncated ? h("span", { class: "chip-badge" }, "cut") : null,
              c.note && !c.truncated ? h("span", { class: "chip-badge" }, "not read") : null,
            ),
          ),
        )
      : null,
    item.source === "prompt" ? renderCheckpointActions(item) : null,
  );
}

/** "Restore to here" / "Compare" on a prompt whose turn has a restore point (hidden while a run is live). */
function renderCheckpointActions(row: UserRow): HTMLElement | null {
  if (row.checkpointId === undefined) return null;
  const data = { "data-run-id": row.runId, "data-checkpoint-id": row.checkpointId };
  return h(
    "div",
    { class: "msg-actions checkpoint-actions" },
    h(
      "button",
      { type: "button", class: "link restore-here", "data-action": "restoreCheckpoint", ...data, title: "Put the files (and optionally the conversation) back as they were before this message" },
      icon(ICONS.history),
      "Restore to here",
    ),
    h(
      "button",
      { type: "button", class: "link compare-checkpoint", "data-action": "compareCheckpoint", ...data, title: "Show what changed in the files since this message" },
      icon(ICONS.diff),
      "Compare",
    ),
  );
}

function renderAssistant(item: AssistantItem): HTMLElement {
  const el = h("article", { class: `msg msg-assistant${item.streaming ? " streaming" : ""}`, "aria-label": "lovia" });
  const block = htmlBlock("markdown", renderMarkdown(item.text));
  decorateCode(block, { insert: true });
  el.append(block);
  if (item.streaming) el.append(h("span", { class: "cursor", "aria-hidden": "true" }));
  return el;
}

type In<T> = T & { runId: string };

function renderReasoning(run: { runId: string }, item: ReasoningItem, memory: UiMemory): HTMLElement {
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

/** A finished tool's diff, as the row carries it (changed lines with context). */
function renderShownDiff(diff: ShownDiff): HTMLElement {
  const rows: HTMLElement[] = diff.lines.map((line) => {
    if (line === null) return h("div", { class: "diff-line diff-gap" }, "⋯");
    const cls = line.op === "+" ? "diff-add" : line.op === "-" ? "diff-del" : "diff-ctx";
    return h("div", { class: `diff-line ${cls}` }, h("span", { class: "diff-op", "aria-hidden": "true" }, line.op), line.text);
  });
  if (diff.more > 0) rows.push(h("div", { class: "diff-line diff-gap" }, `… ${diff.more} more lines`));
  return h(
    "figure",
    { class: "diff", "aria-label": `Diff of ${diff.path}` },
    h(
      "figcaption",
      {},
      h("span", { class: "diff-path" }, basename(diff.path)),
      diff.created ? h("span", { class: "badge" }, "new file") : null,
      h("span", { class: "diff-stat" }, h("span", { class: "diff-add-count" }, `+${diff.added}`), " ", h("span", { class: "diff-del-count" }, `−${diff.removed}`)),
    ),
    h("div", { class: "diff-body" }, rows),
  );
}

function renderContent(content: ShownContent[]): HTMLElement[] {
  return content.map((c) => {
    if (c.type === "diff") return renderShownDiff(c);
    return h("pre", { class: "tool-text" }, c.text, c.more > 0 ? h("span", { class: "muted" }, `\n… ${c.more.toLocaleString("en-US")} more characters`) : null);
  });
}

/** Reads, lists and searches: one line that expands, unless something needs the reader. */
function isCompact(item: ToolRow): boolean {
  return (item.toolKind === "read" || item.toolKind === "search") && item.status !== "running" && !item.approval;
}

/** A short summary of a compact row's result ("30 lines", "8 matches"). */
function resultSummary(item: ToolRow): string {
  if (item.isError || item.status !== "completed") return STATUS_LABEL[item.status] ?? item.status;
  const first = item.content.find((c): c is ShownText => c.type === "text");
  const lines = first?.lines ?? 0;
  if (item.toolKind === "search") return lines === 1 ? "1 result" : `${lines} results`;
  return lines === 1 ? "1 line" : `${lines} lines`;
}

function toolIcon(item: Pick<ToolItem, "toolKind">): HTMLElement {
  return h("span", { class: "tool-icon", title: item.toolKind }, icon(TOOL_ICONS[item.toolKind] ?? TOOL_ICONS.other));
}

/** Which MCP server served the call (MCP tools only). */
function serverBadge(item: Pick<ToolItem, "server">): HTMLElement | null {
  return item.server ? h("span", { class: "badge tool-server", title: `Served by the MCP server ${item.server}` }, item.server) : null;
}

/** "from t1 · helper" on a request a subagent makes. */
function requesterLabel(item: Pick<ApprovalItem, "requester">): HTMLElement | null {
  return item.requester ? h("span", { class: "approval-requester", title: "A subagent asks" }, `from ${item.requester.taskId} · ${item.requester.name}`) : null;
}

function renderCompactTool(run: { runId: string }, item: ToolRow, memory: UiMemory): HTMLElement {
  const key = `${run.runId}:${item.id}:row`;
  const el = details(
    key,
    memory,
    [
      toolIcon(item),
      h("span", { class: "tool-title" }, item.title || item.name),
      renderLocations(item.locations),
      serverBadge(item),
      h("span", { class: `tool-meta status-${item.status}` }, resultSummary(item)),
    ].filter((x): x is HTMLElement => x !== null),
    renderContent(item.content),
    `tool tool-row tool-${item.toolKind} tool-status-${item.status}${item.isError ? " tool-error" : ""}`,
  );
  el.setAttribute("aria-label", `Tool: ${item.title || item.name}`);
  return el;
}

function renderTool(run: { runId: string }, item: ToolRow, memory: UiMemory): HTMLElement {
  if (isCompact(item)) return renderCompactTool(run, item, memory);
  const approval = item.approval;
  const pending = approval?.state === "pending";
  const awaiting = item.status === "running" && item.awaiting;
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
  const command = typeof (item.input as { command?: unknown })?.command === "string" ? (item.input as { command: string }).command : approval?.command;
  const classes = [`tool tool-${item.toolKind} tool-status-${status}`];
  if (item.isError) classes.push("tool-error");
  if (approval) classes.push(`approval approval-${approval.state}`);
  const el = h(
    "article",
    {
      class: classes.join(" "),
      "aria-label": `Tool: ${item.title || item.name}`,
      role: pending ? "alertdialog" : undefined,
      "data-approval-id": approval?.approvalId,
    },
    h(
      "header",
      { class: "tool-head" },
      toolIcon(item),
      h("span", { class: "tool-title approval-title" }, item.title || item.name),
      serverBadge(item),
      pending ? h("span", { class: "badge" }, approval.action) : null,
      h("span", { class: `tool-status status-${status}` }, status === "running" ? h("span", { class: "spinner", "aria-hidden": "true" }) : null, STATUS_LABEL[status] ?? status),
    ),
    renderLocations(item.locations),
    (item.toolKind === "execute" || approval?.action === "shell") && command
      ? h("pre", { class: "tool-command" }, h("span", { class: "prompt", "aria-hidden": "true" }, "$ "), command)
      : null,
    output,
    approval ? renderApprovalPart(run, approval, memory) : null,
    resultBody.length > 0
      ? item.content.some((c) => c.type === "diff")
        ? h("div", { class: "tool-result" }, resultBody)
        : details(`${run.runId}:${item.id}:result`, memory, [h("span", {}, item.isError ? "Error" : "Result")], resultBody, "tool-result")
      : null,
    input && input !== "{}" && !pending
      ? details(`${run.runId}:${item.id}:input`, memory, [h("span", {}, "Input")], [h("pre", { class: "tool-input" }, input)], "tool-input-details")
      : null,
  );
  return el;
}

/** The approval inside a tool's card: what is asked and the options, or the outcome. */
function renderApprovalPart(run: { runId: string }, item: ApprovalItem, memory: UiMemory): HTMLElement {
  const pending = item.state === "pending";
  if (!pending) {
    const by = item.by ? ` by ${item.by}` : "";
    const edited = item.edited ? " with your changes" : "";
    return h("div", { class: `approval-outcome outcome-${item.state}` }, icon(ICONS.shield), `${OUTCOME_LABEL[item.state] ?? item.state}${edited}${by}`, requesterLabel(item));
  }
  const box = h(
    "div",
    { class: "approval-box" },
    h("div", { class: "approval-head" }, icon(ICONS.shield), h("span", {}, "Approval needed"), requesterLabel(item)),
    // A change to editor, git or agent configuration says so before anything else.
    item.warning ? h("div", { class: "approval-warning", role: "alert" }, icon(ICONS.warning), h("span", {}, item.warning)) : null,
    // A shell command is already on the card; other actions say what they do.
    item.detail && item.action !== "shell" ? h("div", { class: "approval-detail" }, item.detail) : null,
    item.paths.length > 0 && !item.diff && item.action !== "shell" ? h("ul", { class: "approval-paths" }, item.paths.map((p) => h("li", {}, p))) : null,
    item.diff ? item.diff.map((d, i) => renderReviewDiff(item, i, d, memory)) : null,
  );
  appendDecision(box, run, item, memory);
  return box;
}

/** A proposed file change with a Keep / Reject toggle on each hunk. */
function renderReviewDiff(item: ApprovalItem, file: number, diff: FileDiff, memory: UiMemory): HTMLElement {
  const rejected = memory.rejectedHunks.get(item.approvalId) ?? new Set<string>();
  const lines = reviewLines(diff.oldText, diff.newText);
  const hunks = hunksOf(diff.oldText, diff.newText, file);
  const total = hunks.length;
  const rows: HTMLElement[] = [];
  let last = -1;
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line === null) {
      rows.push(h("div", { class: "diff-line diff-gap" }, "⋯"));
      continue;
    }
    if (line.hunk !== undefined && line.hunk !== last) {
      last = line.hunk;
      const id = hunks[line.hunk]!.id;
      const off = rejected.has(id);
      const toggle = (reject: boolean, label: string) =>
        h(
          "button",
          {
            type: "button",
            class: `hunk-button${off === reject ? " on" : ""}`,
            "data-action": "toggleHunk",
            "data-approval-id": item.approvalId,
            "data-hunk": id,
            "data-reject": reject ? "1" : "0",
            "aria-pressed": String(off === reject),
            "aria-label": `${label} hunk ${(line.hunk ?? 0) + 1}`,
          },
          label,
        );
      rows.push(
        h(
          "div",
          { class: `hunk-bar${off ? " hunk-off" : ""}`, role: "group", "aria-label": `Hunk ${line.hunk + 1} of ${total}` },
          h("span", { class: "hunk-label" }, `Hunk ${line.hunk + 1} of ${total}${off ? " — rejected" : ""}`),
          toggle(false, "Keep"),
          toggle(true, "Reject"),
        ),
      );
    }
    if (line.op === "+") added++;
    if (line.op === "-") removed++;
    const off = line.hunk !== undefined && rejected.has(hunks[line.hunk]!.id);
    const cls = line.op === "+" ? "diff-add" : line.op === "-" ? "diff-del" : "diff-ctx";
    rows.push(h("div", { class: `diff-line ${cls}${off ? " hunk-rejected" : ""}` }, h("span", { class: "diff-op", "aria-hidden": "true" }, line.op), line.text));
  }
  return h(
    "figure",
    { class: "diff review-diff", "aria-label": `Diff of ${diff.path}` },
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

/** Hunks of an approval's diff: how many, and how many the reader rejected. */
export function hunkCounts(item: ApprovalItem, memory: UiMemory): { total: number; rejected: number } {
  const rejected = memory.rejectedHunks.get(item.approvalId) ?? new Set<string>();
  const hunks = (item.diff ?? []).flatMap((d, file) => hunksOf(d.oldText, d.newText, file));
  return { total: hunks.length, rejected: hunks.filter((hunk) => rejected.has(hunk.id)).length };
}

/** The files whose text differs from the proposal once the rejected hunks are put back. */
export function editsFor(item: ApprovalItem, memory: UiMemory): { path: string; newText: string }[] {
  const rejected = memory.rejectedHunks.get(item.approvalId);
  if (!rejected || rejected.size === 0) return [];
  const edits: { path: string; newText: string }[] = [];
  (item.diff ?? []).forEach((d, file) => {
    const newText = withoutHunks(d.oldText, d.newText, file, rejected);
    if (newText !== d.newText) edits.push({ path: d.path, newText });
  });
  return edits;
}

/** Review link, reason box and the decision buttons of a pending approval. */
function appendDecision(el: HTMLElement, run: { runId: string }, item: ApprovalItem, memory: UiMemory): void {
  const { total, rejected } = hunkCounts(item, memory);
  const none = total > 0 && rejected === total;
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
            disabled: o.decision.startsWith("allow") && none,
            title: o.decision.startsWith("allow") && none ? "Every hunk is rejected: reject the change instead" : undefined,
          },
          o.decision.startsWith("allow") && rejected > 0 && !none ? `${o.label} (${total - rejected} of ${total} hunks)` : o.label,
        ),
      ),
    ),
  );
}

/** An approval with no tool card to live in (its own card). */
function renderApproval(run: { runId: string }, item: ApprovalItem, memory: UiMemory): HTMLElement {
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
      requesterLabel(item),
    ),
    h("div", { class: "approval-title" }, item.title),
    item.detail && pending ? h("div", { class: "approval-detail" }, item.detail) : null,
    item.command && pending ? h("pre", { class: "tool-command" }, h("span", { class: "prompt", "aria-hidden": "true" }, "$ "), item.command) : null,
    pending && item.paths.length > 0 && !item.diff ? h("ul", { class: "approval-paths" }, item.paths.map((p) => h("li", {}, p))) : null,
    pending && item.diff ? item.diff.map((d, i) => renderReviewDiff(item, i, d, memory)) : null,
  );
  if (pending) appendDecision(el, run, item, memory);
  else {
    const by = item.by ? ` by ${item.by}` : "";
    el.append(h("div", { class: `approval-outcome outcome-${item.state}` }, `${OUTCOME_LABEL[item.state] ?? item.state}${by}`));
  }
  return el;
}

/** "Files changed" under a finished run: each file with its +/− counts opens its diff. */
function renderChanges(row: ChangesRow): HTMLElement {
  const added = row.files.reduce((n, f) => n + f.added, 0);
  const removed = row.files.reduce((n, f) => n + f.removed, 0);
  return h(
    "section",
    { class: "changes", "aria-label": "Files changed" },
    h(
      "div",
      { class: "section-title" },
      `${row.files.length} ${row.files.length === 1 ? "file" : "files"} changed `,
      h("span", { class: "diff-add-count" }, `+${added}`),
      " ",
      h("span", { class: "diff-del-count" }, `−${removed}`),
    ),
    h(
      "ul",
      { class: "changes-list" },
      row.files.map((f) =>
        h(
          "li",
          {},
          h(
            "button",
            { type: "button", class: "link change", "data-action": "openChange", "data-run-id": row.runId, "data-path": f.path, title: `Open the diff of ${f.path}` },
            icon(ICONS.diff),
            h("span", { class: "change-path" }, basename(f.path)),
            f.created ? h("span", { class: "badge" }, "new") : null,
          ),
          h("span", { class: "diff-stat" }, h("span", { class: "diff-add-count" }, `+${f.added}`), " ", h("span", { class: "diff-del-count" }, `−${f.removed}`)),
        ),
      ),
    ),
  );
}

function renderQuestion(run: { runId: string }, item: QuestionItem): HTMLElement {
  const answered = item.answer !== undefined;
  const el = h(
    "article",
    { class: `question${answered ? " answered" : ""}`, role: answered ? undefined : "alertdialog", "aria-label": "Question from the agent" },
    h(
      "header",
      { class: "approval-head" },
      icon(ICONS.question),
      h("span", {}, "Question"),
      requesterLabel(item),
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

function renderNotice(item: NoticeItem): HTMLElement {
  const el = h(
    "div",
    { class: `notice notice-${item.level}`, role: item.level === "error" ? "alert" : "status" },
    h("span", {}, item.text),
    item.hint ? h("div", { class: "hint" }, item.hint) : null,
  );
  return el;
}

/** One transcript row as a DOM element (rows are drawn only when new or changed). */
export function renderRow(row: Row, memory: UiMemory): HTMLElement {
  switch (row.type) {
    case "user":
      return renderUser(row);
    case "assistant":
      return renderAssistant(row);
    case "reasoning":
      return renderReasoning(row, row, memory);
    case "tool":
      return renderTool(row, row, memory);
    case "approval":
      return renderApproval(row, row, memory);
    case "question":
      return renderQuestion(row, row);
    case "notice":
      return renderNotice(row);
    case "footer":
      return renderRunFooter(row);
    case "changes":
      return renderChanges(row);
    case "subagent":
      return renderSubagent(row, memory);
  }
}

/** The footer under a finished run (resume offer). */
function renderRunFooter(run: In<FooterRow>): HTMLElement {
  return h(
    "div",
    { class: "run-footer" },
    h("button", { type: "button", class: "secondary", "data-action": "resume", "data-run-id": run.runId }, icon(ICONS.play), "Resume run"),
  );
}

// ---------------------------------------------------------------------------
// Chrome around the transcript

export function renderSessions(state: Pick<ChromeState, "sessions" | "sessionId">): HTMLElement {
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

export function renderTodos(run: ActiveRunView | undefined): HTMLElement | null {
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

/** How much of the run's input the provider's prompt cache served ("82% cached"), once the
 *  run has read or written the cache; the tooltip's detail adds the counts and the last turn. */
function cachedShare(u: UsageView): { share: string; detail: string } | undefined {
  const read = u.cacheReadTokens ?? 0;
  const written = u.cacheWriteTokens ?? 0;
  if (read + written <= 0 || u.inputTokens <= 0) return undefined;
  const pct = (n: number, of: number) => `${Math.min(100, Math.round((n / of) * 100))}%`;
  const last = u.turn && u.turn.inputTokens > 0 ? ` · last turn ${pct(u.turn.cacheReadTokens, u.turn.inputTokens)} cached` : "";
  return {
    share: `${pct(read, u.inputTokens)} cached`,
    detail: `${read} read from the prompt cache, ${written} written to it${last}`,
  };
}

export function renderUsage(run: ActiveRunView | undefined, sessionCostUsd?: number): HTMLElement | null {
  const u = run?.usage;
  if (!u) return null;
  const runCost = typeof u.costUsd === "number" ? ` · ${formatCost(u.costUsd)}` : "";
  const sessionCost =
    typeof sessionCostUsd === "number" && (typeof u.costUsd !== "number" || Math.abs(sessionCostUsd - u.costUsd) > 1e-9)
      ? ` · session ${formatCost(sessionCostUsd)}`
      : "";
  const cached = cachedShare(u);
  const tokens = `↑${formatTokens(u.inputTokens)} ↓${formatTokens(u.outputTokens)}${cached ? ` · ${cached.share}` : ""}${runCost}${sessionCost}`;
  const title = `input ${u.inputTokens} · output ${u.outputTokens} tokens${cached ? ` · ${cached.detail}` : ""}${runCost ? ` · this run ${formatCost(u.costUsd!)}` : ""}${sessionCost ? ` · this session ${formatCost(sessionCostUsd!)}` : ""}`;
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
