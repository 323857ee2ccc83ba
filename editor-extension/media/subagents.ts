/**
 * Subagents in the transcript. A child run comes as rows (src/chat/rows.ts): a status row
 * nested in the `spawn_subagent` card that started it — one live line (name, current step,
 * tokens) with its own Stop and a steer box, over a collapsed transcript — and then the child's
 * own rows, each nested in that status row. So a child's streamed chunk redraws the child's one
 * row, never the spawning card. A child's pending approvals and questions are drawn above its
 * collapsed transcript: they wait for the user.
 *
 * A nested row is drawn into a slot (`data-slot`) of the row it names in `nestedIn`; when that
 * row is drawn again, the rows inside its slots move over to the new element. A subagent's
 * transcript slot holds rows only while it is open (main.ts draws them on the toggle).
 */
import type { Row, SubagentRow } from "../src/chat/rows";
import { h, icon } from "./dom";
import { formatTokens } from "./format";
import { ICONS } from "./icons";
import type { UiMemory } from "./render";

const STATUS_TEXT: Record<string, string> = {
  running: "running",
  completed: "done",
  failed: "failed",
  cancelled: "stopped",
  interrupted: "interrupted",
};

/** The slots a row's element has for the rows nested in it. */
type SlotName = "children" | "waiting" | "transcript";

export function renderSubagent(row: SubagentRow, memory: UiMemory): HTMLElement {
  const live = row.status === "running";
  const line = h(
    "div",
    { class: "subagent-line" },
    live ? h("span", { class: "spinner", "aria-hidden": "true" }) : h("span", { class: `subagent-dot dot-${row.status}`, "aria-hidden": "true" }),
    h("span", { class: "subagent-name" }, `${row.taskId} · ${row.name}`),
    h("span", { class: "subagent-step", title: row.step }, row.step),
    h("span", { class: "subagent-tokens muted" }, row.tokens ? `${formatTokens(row.tokens)} tokens` : null),
    h("span", { class: `subagent-status status-${row.status}` }, STATUS_TEXT[row.status] ?? row.status),
    live
      ? h(
          "button",
          { type: "button", class: "icon-button subagent-stop", "data-action": "cancel", "data-run-id": row.id, title: `Stop ${row.taskId}`, "aria-label": `Stop subagent ${row.taskId}` },
          icon(ICONS.stop),
        )
      : null,
  );
  const key = `subagent:${row.id}`;
  const body = h(
    "details",
    { class: "subagent-transcript", "data-key": key, open: memory.openDetails.has(key) },
    h("summary", {}, "Transcript"),
    h("div", { class: "subagent-prompt muted" }, row.prompt),
    h("div", { class: "subagent-body", "data-slot": "transcript" }),
  );
  body.addEventListener("toggle", () => {
    if (body.open) memory.openDetails.add(key);
    else memory.openDetails.delete(key);
  });
  const steer = live
    ? h(
        "form",
        { class: "subagent-steer", "data-action": "steerChild", "data-run-id": row.id },
        h("input", { type: "text", class: "steer-input", placeholder: `Message ${row.taskId}…`, "aria-label": `Message subagent ${row.taskId}` }),
        h("button", { type: "submit", class: "secondary", title: "Send to this subagent" }, icon(ICONS.steer), "Steer"),
      )
    : null;
  return h(
    "section",
    { class: `subagent subagent-${row.status}`, "data-run-id": row.id, "aria-label": `Subagent ${row.taskId} ${row.name}` },
    line,
    h("div", { class: "subagent-waiting", "data-slot": "waiting" }),
    body,
    steer,
  );
}

/** A row that waits for the user (a pending approval, an open question): kept in sight. */
export function waitsForUser(row: Row): boolean {
  switch (row.type) {
    case "tool":
      return row.approval?.state === "pending";
    case "approval":
      return row.state === "pending";
    case "question":
      return row.answer === undefined;
    default:
      return false;
  }
}

function ownSlots(el: HTMLElement): HTMLElement[] {
  return Array.from(el.querySelectorAll<HTMLElement>(":scope > [data-slot], :scope > details > [data-slot]"));
}

/** The slot of `el` (the drawn `container` row) that `row` goes into; made when missing. */
export function slotFor(el: HTMLElement, container: Row, row: Row): HTMLElement {
  const name: SlotName = container.type === "subagent" ? (waitsForUser(row) ? "waiting" : "transcript") : "children";
  const found = ownSlots(el).find((s) => s.dataset.slot === name);
  if (found) return found;
  const slot = h("div", { class: "subagents", "data-slot": name, "aria-label": "Subagents" });
  el.append(slot);
  return slot;
}

/** Whether rows put into `slot` are seen: a subagent's transcript only while it is open. */
export function slotShown(slot: HTMLElement): boolean {
  return slot.dataset.slot !== "transcript" || (slot.closest("details") as HTMLDetailsElement | null)?.open === true;
}

/** The slot of a drawn subagent row that holds its transcript. */
export function transcriptSlot(el: HTMLElement): HTMLElement | undefined {
  return ownSlots(el).find((s) => s.dataset.slot === "transcript");
}

/** Move the rows drawn inside `from` (a row's previous element) into `to`, its new one. */
export function adoptNested(from: HTMLElement, to: HTMLElement): void {
  for (const slot of ownSlots(from)) {
    if (slot.childElementCount === 0) continue;
    let target = ownSlots(to).find((s) => s.dataset.slot === slot.dataset.slot);
    if (!target) {
      target = h("div", { class: slot.className, "data-slot": slot.dataset.slot, "aria-label": slot.getAttribute("aria-label") });
      to.append(target);
    }
    target.append(...Array.from(slot.children));
  }
}

/** Put `el` (the row `key`) into `slot` in transcript order. */
export function insertInSlot(slot: HTMLElement, el: HTMLElement, key: string, indexOf: (key: string) => number): void {
  const at = indexOf(key);
  for (const sibling of Array.from(slot.children) as HTMLElement[]) {
    const k = sibling.dataset.key;
    if (k !== undefined && k !== key && indexOf(k) > at) {
      slot.insertBefore(el, sibling);
      return;
    }
  }
  slot.append(el);
}
