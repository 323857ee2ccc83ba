/**
 * Subagents in the transcript: each child run nested under the `spawn_subagent` card that
 * started it, collapsed to one live line (name, current step, tokens) with its own Stop and a
 * steer box, expandable to its full transcript. A child's pending approvals and questions stay
 * visible while it is collapsed: they wait for the user.
 */
import type { ChatViewState } from "../src/chat/messages";
import type { ChildRef, RunView, ToolItem, TranscriptItem } from "../src/protocol/runView";
import { h, icon } from "./dom";
import { ICONS } from "./icons";
import { formatTokens, renderItem, type UiMemory } from "./render";

const STATUS_TEXT: Record<string, string> = {
  running: "running",
  completed: "done",
  failed: "failed",
  cancelled: "stopped",
  interrupted: "interrupted",
};

/** The children spawned by one tool call, with their runs when the view has them. */
export function childrenOf(state: ChatViewState, run: RunView, item: TranscriptItem): { ref: ChildRef; run?: RunView }[] {
  if (item.type !== "tool" || run.children.length === 0) return [];
  const byId = new Map(state.childRuns.map((r) => [r.runId, r]));
  return run.children
    .filter((c) => c.toolCallId === (item as ToolItem).toolCallId)
    .map((ref) => {
      const child = byId.get(ref.runId);
      return child ? { ref, run: child } : { ref };
    });
}

/** Changes whenever anything nested under the item changes (the card is re-rendered then). */
export function nestedRev(state: ChatViewState, run: RunView, item: TranscriptItem, memory: UiMemory): number {
  let rev = 0;
  for (const { ref, run: child } of childrenOf(state, run, item)) {
    rev += (child?.rev ?? 0) * 7 + ref.status.length + (memory.openDetails.has(detailsKey(ref)) ? 1 : 0);
    if (child) for (const i of child.items) rev += nestedRev(state, child, i, memory);
  }
  return rev;
}

function detailsKey(ref: ChildRef): string {
  return `subagent:${ref.runId}`;
}

function tokensOf(run: RunView | undefined): string | null {
  if (!run?.usage) return null;
  const total = run.usage.inputTokens + run.usage.outputTokens;
  return total > 0 ? `${formatTokens(total)} tokens` : null;
}

function waitsForUser(item: TranscriptItem): boolean {
  return (item.type === "approval" && item.state === "pending") || (item.type === "question" && item.answer === undefined);
}

/** The nested children of a spawn card, or null when it spawned none. */
export function renderChildren(state: ChatViewState, run: RunView, item: TranscriptItem, memory: UiMemory): HTMLElement | null {
  const children = childrenOf(state, run, item);
  if (children.length === 0) return null;
  return h(
    "div",
    { class: "subagents", "aria-label": "Subagents" },
    children.map(({ ref, run: child }) => renderChild(state, ref, child, memory)),
  );
}

function renderChild(state: ChatViewState, ref: ChildRef, run: RunView | undefined, memory: UiMemory): HTMLElement {
  const raw = run?.status ?? ref.status;
  // A child waiting for approval or being stopped is still running.
  const status = raw === "awaiting_approval" || raw === "cancelling" ? "running" : raw;
  const live = status === "running";
  const step = live ? (run?.activity ?? "starting") : (ref.summary ?? "");
  const line = h(
    "div",
    { class: "subagent-line" },
    live ? h("span", { class: "spinner", "aria-hidden": "true" }) : h("span", { class: `subagent-dot dot-${status}`, "aria-hidden": "true" }),
    h("span", { class: "subagent-name" }, `${ref.taskId} · ${ref.name}`),
    h("span", { class: "subagent-step", title: step }, step),
    h("span", { class: "subagent-tokens muted" }, tokensOf(run)),
    h("span", { class: `subagent-status status-${status}` }, STATUS_TEXT[status] ?? status),
    live
      ? h(
          "button",
          { type: "button", class: "icon-button subagent-stop", "data-action": "cancel", "data-run-id": ref.runId, title: `Stop ${ref.taskId}`, "aria-label": `Stop subagent ${ref.taskId}` },
          icon(ICONS.stop),
        )
      : null,
  );
  const items = run?.items ?? [];
  const waiting = items.filter(waitsForUser).map((i) => renderItem(run!, i, memory));
  const transcript = items
    .filter((i) => !waitsForUser(i))
    .flatMap((i) => {
      const el = renderItem(run!, i, memory);
      const nested = renderChildren(state, run!, i, memory);
      if (nested) el.append(nested);
      return [el];
    });
  const key = detailsKey(ref);
  const body = h(
    "details",
    { class: "subagent-transcript", "data-key": key, open: memory.openDetails.has(key) },
    h("summary", {}, "Transcript"),
    h("div", { class: "subagent-prompt muted" }, ref.prompt),
    transcript,
  );
  body.addEventListener("toggle", () => {
    if (body.open) memory.openDetails.add(key);
    else memory.openDetails.delete(key);
  });
  const steer = live
    ? h(
        "form",
        { class: "subagent-steer", "data-action": "steerChild", "data-run-id": ref.runId },
        h("input", { type: "text", class: "steer-input", placeholder: `Message ${ref.taskId}…`, "aria-label": `Message subagent ${ref.taskId}` }),
        h("button", { type: "submit", class: "secondary", title: "Send to this subagent" }, icon(ICONS.steer), "Steer"),
      )
    : null;
  return h(
    "section",
    { class: `subagent subagent-${status}`, "data-run-id": ref.runId, "aria-label": `Subagent ${ref.taskId} ${ref.name}` },
    line,
    waiting,
    body,
    steer,
  );
}
