/**
 * The chat webview. It folds the extension's reset/patch messages into a {@link PanelModel}
 * and draws only what changed: a streamed chunk re-renders the one row it belongs to. The
 * transcript DOM is bounded: only the last rows are drawn (more on demand, scrolling up).
 * It holds no source of truth (only the composer draft and which sections are expanded).
 */
import type { ChromeField, ChromeState, ExtensionMessage, SyncMessage, WebviewIntent } from "../src/chat/messages";
import type { ApprovalChoice } from "../src/protocol/types";
import { h, icon } from "./dom";
import { codeOf } from "./code";
import { CommandPicker } from "./commands";
import { MentionPicker } from "./mentions";
import { ICONS } from "./icons";
import { PanelModel, type Change } from "./model";
import { editsFor, renderRow, renderSessions, renderSteers, renderTodos, renderUsage, type UiMemory } from "./render";
import { adoptNested, insertInSlot, slotFor, slotShown, transcriptSlot } from "./subagents";
import type { ApprovalItem } from "../src/protocol/runView";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface Persisted {
  draft?: string;
  showSessions?: boolean;
  /** The last `state.draft` put into the composer (a reload must not put it there again). */
  draftShown?: number;
}

/** Rows drawn when a session is first shown, and how many more each "show earlier" adds. */
const WINDOW = 120;
/** Past this many drawn rows, rows scrolled far above are dropped again while following the end. */
const MAX_DRAWN = 240;

const vscode = acquireVsCodeApi();
const persisted: Persisted = (vscode.getState() as Persisted | undefined) ?? {};
const memory: UiMemory = { openDetails: new Set(), rejectedHunks: new Map() };
const model = new PanelModel();

function post(intent: WebviewIntent): void {
  vscode.postMessage(intent);
}

function persist(): void {
  vscode.setState(persisted);
}

// ---------------------------------------------------------------------------
// Static shell

const app = document.getElementById("app")!;
const header = h("header", { class: "topbar" });
const sessionsPanel = h("div", { class: "sessions-panel", id: "sessions", hidden: !persisted.showSessions });
const banner = h("div", { class: "banner-area" });
const todosArea = h("div", { class: "todos-area" });
const transcript = h("main", { class: "transcript", role: "log", "aria-live": "polite", "aria-label": "Conversation", tabindex: 0 });
const earlier = h("button", { type: "button", class: "link show-earlier", "data-action": "showEarlier", hidden: true });
const rowsBox = h("div", { class: "rows" });
transcript.append(earlier, rowsBox);
const usageArea = h("div", { class: "usage-area" });
const steersArea = h("div", { class: "steers-area" });
const instructionsArea = h("div", { class: "instructions-area muted" });
const textarea = h("textarea", {
  class: "composer-input",
  rows: 3,
  "aria-label": "Message",
  placeholder: "Ask lovia…",
});
textarea.value = persisted.draft ?? "";
const sendButton = h("button", { type: "submit", class: "primary send", "aria-label": "Send" });
const stopButton = h("button", { type: "button", class: "secondary danger stop", "data-action": "cancel", hidden: true }, icon(ICONS.stop), "Stop");
// Beside Send: the same text as a new agent in a git worktree of its own (issue 27).
const worktreeButton = h(
  "button",
  { type: "button", class: "secondary worktree", "data-action": "newWorktreeAgent", title: "Start this prompt as a new agent in a git worktree of its own (your files stay as they are until you apply its changes from the Agents view)", "aria-label": "New agent in a worktree" },
  icon(ICONS.branch),
  "Worktree",
);
const composerHint = h("div", { class: "composer-hint muted" });
const mentions = new MentionPicker(textarea, post);
const commands = new CommandPicker(textarea, post);
const composer = h(
  "form",
  { class: "composer", "aria-label": "Composer" },
  mentions.popup,
  commands.popup,
  mentions.chips,
  textarea,
  h("div", { class: "composer-row" }, composerHint, h("div", { class: "composer-buttons" }, stopButton, worktreeButton, sendButton)),
);
app.append(header, sessionsPanel, banner, todosArea, transcript, usageArea, steersArea, instructionsArea, composer);

let state: ChromeState | undefined;
/** The session whose scroll position was restored (once per session shown). */
let restoredFor: string | undefined;
/** Where the view last scrolled itself: scroll events that land there are not the reader's. */
let autoScrollTop = -1;
/** The view follows the end of the transcript until the reader scrolls away from it. */
let following = false;
/** Drawn rows by key. */
const drawn = new Map<string, HTMLElement>();
/** Index (in the model's order) of the first drawn row, and how many rows the window spans. */
let windowStart = 0;
let windowSize = WINDOW;
let emptyShown = false;

// ---------------------------------------------------------------------------
// Rendering: chrome

function renderHeader(s: ChromeState): void {
  const serverBadge =
    s.server.state === "running"
      ? null
      : h("span", { class: `badge server-${s.server.state}`, role: "status" }, s.server.state === "stopped" ? "server stopped" : `server ${s.server.state}…`);
  const parts: (HTMLElement | null)[] = [
    h("div", { class: "session-name", title: s.sessionTitle ?? "" }, s.sessionTitle ?? (s.sessionId ? "Session" : "New session")),
    s.trusted ? null : h("span", { class: "badge badge-warn", title: "Untrusted workspace: read-only, no custom agent" }, "restricted"),
    serverBadge,
    h(
      "button",
      { type: "button", class: `model-button model-${s.model.kind}`, "data-action": "chooseModel", title: "Model for the next run (click to change)", "aria-label": `Model: ${s.model.label}. Change model` },
      s.model.label,
    ),
    h(
      "div",
      { class: "topbar-buttons" },
      h(
        "button",
        { type: "button", class: "icon-button", "data-action": "toggleSessions", "aria-expanded": String(!sessionsPanel.hidden), "aria-controls": "sessions", title: "Sessions", "aria-label": "Sessions" },
        icon(ICONS.history),
      ),
      h("button", { type: "button", class: "icon-button", "data-action": "newSession", title: "New session", "aria-label": "New session" }, icon(ICONS.plus)),
    ),
  ];
  header.replaceChildren(...parts.filter((p): p is HTMLElement => p !== null));
}

function renderBanner(s: ChromeState): void {
  if (!s.error) {
    banner.replaceChildren(...(s.sandboxNotice ? [renderSandboxNotice(s.sandboxNotice)] : []));
    return;
  }
  const needsKey = s.error.code === -32016;
  banner.replaceChildren(
    h(
      "div",
      { class: "banner banner-error", role: "alert" },
      h("div", {}, s.error.text),
      s.error.hint ? h("div", { class: "hint" }, s.error.hint) : null,
      h(
        "div",
        { class: "actions" },
        needsKey ? h("button", { type: "button", class: "secondary", "data-action": "chooseModel" }, "Choose a model") : null,
        needsKey ? h("button", { type: "button", class: "secondary", "data-action": "setApiKey" }, "Set API key") : null,
        needsKey ? h("button", { type: "button", class: "secondary", "data-action": "useDemo" }, "Try the offline demo") : null,
        h("button", { type: "button", class: "link", "data-action": "dismissError" }, "Dismiss"),
      ),
    ),
  );
}

/** Shell commands run unconfined here (or refuse to): said once, until dismissed. */
function renderSandboxNotice(text: string): HTMLElement {
  return h(
    "div",
    { class: "banner banner-warn", role: "status" },
    h("div", {}, text.endsWith(".") ? text : `${text}.`),
    h("div", { class: "hint" }, "Install bubblewrap (Linux) to confine them, or set lovia.sandbox.enabled."),
    h("div", { class: "actions" }, h("button", { type: "button", class: "link", "data-action": "dismissSandboxNotice" }, "Dismiss")),
  );
}

/** The project instruction files the agent reads, each a link to the file (docs/customization.md). */
function renderInstructions(s: ChromeState): void {
  const files = s.instructions ?? [];
  if (files.length === 0) {
    instructionsArea.replaceChildren();
    return;
  }
  const links = files.flatMap((f, i) => [
    ...(i > 0 ? [", "] : []),
    h("button", { type: "button", class: "link instruction", "data-action": "openLocation", "data-uri": f.uri, title: f.uri }, f.label),
  ]);
  instructionsArea.replaceChildren(h("span", { class: "instructions-label" }, "Instructions: "), ...links);
}

function renderComposer(s: ChromeState): void {
  const live = s.liveRunId !== undefined;
  composer.classList.toggle("steering", live);
  textarea.placeholder = live ? "Steer the running agent… (delivered at its next turn)" : "Ask lovia… (Enter to send, Shift+Enter for a new line)";
  textarea.setAttribute("aria-label", live ? "Steer message" : "Message");
  sendButton.replaceChildren(icon(live ? ICONS.steer : ICONS.send), live ? "Steer" : "Send");
  sendButton.setAttribute("aria-label", live ? "Send steer message" : "Send");
  sendButton.disabled = s.server.state !== "running";
  worktreeButton.disabled = s.server.state !== "running";
  stopButton.hidden = !live;
  const activity = live && s.active?.runId === s.liveRunId ? s.active?.activity : undefined;
  composerHint.textContent = activity ? `● ${activity}` : "";
  // Restoring needs the workspace to hold still: no restore actions while a run is live.
  app.classList.toggle("run-live", live);
}

/** A cut turn's prompt after "Restore to here": into the composer once (not again on a reload). */
function renderDraft(s: ChromeState): void {
  if (!s.draft || s.draft.id === persisted.draftShown) return;
  persisted.draftShown = s.draft.id;
  textarea.value = s.draft.text;
  persisted.draft = s.draft.text;
  persist();
  textarea.focus();
}

const fill = (el: HTMLElement, node: HTMLElement | null) => el.replaceChildren(...(node ? [node] : []));

/** Which chrome sections depend on which fields. */
const SECTIONS: [ChromeField[], (s: ChromeState) => void][] = [
  [["server", "trusted", "sessionTitle", "sessionId", "model"], renderHeader],
  [["sessions", "sessionId"], (s) => sessionsPanel.replaceChildren(renderSessions(s))],
  [["error", "sandboxNotice"], renderBanner],
  [["active"], (s) => fill(todosArea, renderTodos(s.active))],
  [["active", "sessionCostUsd"], (s) => fill(usageArea, renderUsage(s.active, s.sessionCostUsd))],
  [["pendingSteers"], (s) => fill(steersArea, renderSteers(s.pendingSteers))],
  [["instructions"], renderInstructions],
  [["liveRunId", "server", "active"], renderComposer],
  [["draft"], renderDraft],
];

function renderChrome(s: ChromeState, changed: Set<ChromeField> | "all"): void {
  for (const [fields, draw] of SECTIONS) if (changed === "all" || fields.some((f) => changed.has(f))) draw(s);
}

// ---------------------------------------------------------------------------
// Rendering: the transcript (a window over the model's rows)

/** The row a row is drawn inside (a subagent's, or the card that spawned it); undefined: top level. */
function nestedIn(key: string): string | undefined {
  return model.rows.get(key)?.nestedIn;
}

/** The nearest index at or before `i` of a top-level row: a window never starts inside a nest. */
function topLevel(i: number): number {
  let at = Math.max(0, i);
  while (at > 0 && at < model.order.length && nestedIn(model.order[at]!) !== undefined) at--;
  return at;
}

/**
 * Draw (or draw again) one row; the rows drawn inside it move over to the new element. A new
 * top-level row is returned for the caller to put in place; a nested row goes into its
 * container's slot here (null: the container is not drawn, or the row belongs in a subagent's
 * collapsed transcript, which is drawn only while open).
 */
function draw(key: string): HTMLElement | null {
  const row = model.rows.get(key)!;
  let slot: HTMLElement | undefined;
  if (row.nestedIn !== undefined) {
    const container = drawn.get(row.nestedIn);
    const containerRow = model.rows.get(row.nestedIn);
    slot = container && containerRow ? slotFor(container, containerRow, row) : undefined;
    if (!slot || !slotShown(slot)) {
      undraw(key);
      return null;
    }
  }
  const el = renderRow(row, memory);
  el.dataset.key = key;
  el.dataset.row = "";
  const old = drawn.get(key);
  const focus = old ? carryInputs(old, el) : undefined;
  if (old) adoptNested(old, el);
  if (!slot) old?.replaceWith(el);
  else if (old && old.parentElement === slot) old.replaceWith(el);
  else {
    old?.remove();
    insertInSlot(slot, el, key, (k) => model.indexOf(k));
  }
  drawn.set(key, el);
  focus?.();
  return el;
}

/** Take a drawn row out, with every row drawn inside it. */
function undraw(key: string): void {
  const el = drawn.get(key);
  if (!el) return;
  el.remove();
  drawn.delete(key);
  for (const [k, inner] of drawn) if (el.contains(inner)) drawn.delete(k);
}

/** Draw what is missing of the rows nested (at any depth) in the row `key`. */
function drawNested(key: string): void {
  const inside = new Set([key]);
  for (let i = model.indexOf(key) + 1; i < model.order.length; i++) {
    const k = model.order[i]!;
    const container = nestedIn(k);
    if (container === undefined || !inside.has(container)) break; // nested rows follow their container
    inside.add(k);
    if (!drawn.get(k)?.isConnected) draw(k);
  }
}

// A subagent's transcript is drawn while it is open and dropped when it is closed again, so
// a collapsed child costs one line of DOM however long it runs.
rowsBox.addEventListener(
  "toggle",
  (e) => {
    const details = e.target;
    if (!(details instanceof HTMLDetailsElement) || !details.classList.contains("subagent-transcript")) return;
    const row = details.closest<HTMLElement>("[data-row]");
    const key = row?.dataset.key;
    if (!row || key === undefined || drawn.get(key) !== row) return;
    if (details.open) drawNested(key);
    else for (const inner of Array.from(transcriptSlot(row)?.children ?? []) as HTMLElement[]) if (inner.dataset.key) undraw(inner.dataset.key);
  },
  true,
);

function clearRows(): void {
  drawn.clear();
  rowsBox.replaceChildren();
}

/** Draw rows [start, end) of the model's order into an empty box. */
function drawWindow(start: number): void {
  clearRows();
  windowStart = topLevel(start);
  const frag = document.createDocumentFragment();
  for (let i = windowStart; i < model.order.length; i++) {
    const key = model.order[i]!;
    const el = draw(key);
    if (el && nestedIn(key) === undefined) frag.append(el);
  }
  rowsBox.append(frag);
  updateEarlier();
}

function updateEarlier(): void {
  earlier.hidden = windowStart === 0;
  earlier.textContent = `Show ${Math.min(WINDOW, windowStart)} earlier (${windowStart.toLocaleString("en-US")} not shown)`;
}

// Scrolling up to the top of the window draws the rows before it.
new IntersectionObserver(
  (entries) => {
    if (entries.some((e) => e.isIntersecting) && !earlier.hidden && restoredFor !== undefined) showEarlier();
  },
  { root: transcript, rootMargin: "200px 0px 0px 0px" },
).observe(earlier);

/** Index in the model's order of the first drawn row (the model's length when none is). */
function firstDrawnIndex(): number {
  const first = rowsBox.firstElementChild as HTMLElement | null;
  const key = first?.dataset.key;
  return key === undefined ? model.order.length : model.indexOf(key);
}

/** Put a newly inserted row in place: before the next drawn row, else at the end. */
function place(key: string): void {
  if (nestedIn(key) !== undefined) {
    draw(key); // into its container, when that is drawn
    return;
  }
  const at = model.indexOf(key);
  if (drawn.size > 0 && at < firstDrawnIndex()) return; // above the window: stays out of it
  const el = draw(key)!;
  for (let i = at + 1; i < model.order.length; i++) {
    const next = drawn.get(model.order[i]!);
    if (next && next !== el && next.parentElement === rowsBox) {
      rowsBox.insertBefore(el, next);
      return;
    }
  }
  rowsBox.append(el);
}

function showEarlier(): void {
  if (windowStart === 0) return;
  const from = topLevel(windowStart - WINDOW);
  const first = rowsBox.firstElementChild;
  const anchorTop = first ? (first as HTMLElement).offsetTop - transcript.scrollTop : 0;
  const frag = document.createDocumentFragment();
  for (let i = from; i < windowStart; i++) {
    const key = model.order[i]!;
    const el = draw(key);
    if (el && nestedIn(key) === undefined) frag.append(el);
  }
  rowsBox.insertBefore(frag, rowsBox.firstChild);
  windowSize += windowStart - from;
  windowStart = from;
  updateEarlier();
  // Keep what the reader was looking at where it was.
  if (first) transcript.scrollTop = (first as HTMLElement).offsetTop - anchorTop;
}

/** While following the end of a long transcript, drop rows far above the window again. */
function trimWindow(): void {
  const count = model.order.length - windowStart;
  if (count <= MAX_DRAWN) return;
  const to = topLevel(model.order.length - WINDOW);
  if (to <= windowStart) return;
  for (let i = windowStart; i < to; i++) {
    const key = model.order[i]!;
    drawn.get(key)?.remove();
    drawn.delete(key);
  }
  windowStart = to;
  windowSize = WINDOW;
  updateEarlier();
}

function renderTranscript(change: Change): void {
  const s = model.chrome!;
  const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  const firstDraw = s.sessionId !== undefined && restoredFor !== s.sessionId;
  if (model.order.length === 0) {
    clearRows();
    windowStart = 0;
    updateEarlier();
    rowsBox.append(renderEmpty(s));
    emptyShown = true;
    return;
  }
  if (change.reset || emptyShown || firstDraw) {
    emptyShown = false;
    if (firstDraw) windowSize = WINDOW;
    drawWindow(model.order.length - windowSize);
  } else {
    for (const key of change.removed) {
      drawn.get(key)?.remove();
      drawn.delete(key);
    }
    for (const key of change.inserted) place(key);
    windowStart = firstDrawnIndex();
    updateEarlier();
    // A nested row that was not drawn may have to be now (an approval in a collapsed child).
    for (const key of change.rows) if (drawn.has(key) || nestedIn(key) !== undefined) draw(key);
    if (atBottom) trimWindow();
  }
  if (firstDraw) {
    // First draw of this session: go where the reader was (kept across reloads), else the end.
    restoredFor = s.sessionId;
    if (s.atBottom === false && s.scrollTop !== undefined) {
      following = false;
      transcript.scrollTop = s.scrollTop;
      autoScrollTop = transcript.scrollTop;
    } else {
      toBottom();
    }
  } else if (atBottom) {
    toBottom();
  }
}

/**
 * Scroll to the end. Rows off screen are laid out at an estimated height until they come into
 * view, so the end moves once they do: settle it in a few rounds.
 */
function toBottom(): void {
  for (let i = 0; i < 4; i++) {
    const height = transcript.scrollHeight;
    transcript.scrollTop = height;
    if (transcript.scrollHeight === height) break;
  }
  autoScrollTop = transcript.scrollTop;
  following = true;
}

new ResizeObserver(() => {
  if (following && Math.abs(transcript.scrollTop - autoScrollTop) < 1) toBottom();
}).observe(rowsBox);

/** A row's own inputs (not those of the rows drawn inside it). */
function ownInputs(row: HTMLElement): HTMLInputElement[] {
  return Array.from(row.querySelectorAll("input")).filter((i) => i.closest("[data-row]") === row);
}

/**
 * Keep a half-typed rejection reason, answer or steer across a redraw of the same row; the
 * returned function gives the focus back (once the new element is in place) if it was there.
 */
function carryInputs(from: HTMLElement, to: HTMLElement): (() => void) | undefined {
  const next = ownInputs(to);
  let refocus: (() => void) | undefined;
  ownInputs(from).forEach((input, i) => {
    const target = next[i];
    if (!target) return;
    if (input.value) target.value = input.value;
    if (input === document.activeElement) {
      const { selectionStart, selectionEnd } = input;
      refocus = () => {
        target.focus();
        if (selectionStart !== null && selectionEnd !== null) target.setSelectionRange(selectionStart, selectionEnd);
      };
    }
  });
  return refocus;
}

function renderEmpty(s: ChromeState): HTMLElement {
  return h(
    "div",
    { class: "empty-state" },
    h("h2", {}, "lovia"),
    h("p", {}, "Ask for a change, a review or an explanation. lovia works in this workspace and asks before it edits files or runs commands."),
    s.trusted ? null : h("p", { class: "muted" }, "This workspace is not trusted: lovia can read files but not change them."),
    s.server.state === "stopped" ? h("p", { class: "notice notice-error" }, `The lovia server is not running${s.server.detail ? `: ${s.server.detail}` : ""}.`) : null,
    s.model.kind === "none" && s.server.state === "running"
      ? h(
          "div",
          { class: "empty-actions" },
          h("p", {}, "No model is set up yet."),
          h("button", { type: "button", class: "primary", "data-action": "chooseModel" }, "Choose a model"),
          h("button", { type: "button", class: "secondary", "data-action": "useDemo" }, "Try the offline demo"),
        )
      : null,
  );
}

function handle(msg: SyncMessage): void {
  const change = model.apply(msg);
  const s = model.chrome;
  if (!s) return;
  state = s;
  renderChrome(s, change.reset ? "all" : change.chrome);
  const emptyNow = model.order.length === 0;
  const chromeTouchesEmpty = emptyNow && ["server", "trusted", "model", "sessionId"].some((f) => change.chrome.has(f as ChromeField));
  if (change.reset || change.inserted.length > 0 || change.removed.length > 0 || change.rows.size > 0 || chromeTouchesEmpty || change.chrome.has("sessionId")) {
    renderTranscript(change);
  }
}

// ---------------------------------------------------------------------------
// Intents

/** The approval a row shows (its own, or the one inside a tool card). */
function approvalOf(key: string | undefined): ApprovalItem | undefined {
  const row = key ? model.rows.get(key) : undefined;
  if (row?.type === "approval") return row;
  if (row?.type === "tool") return row.approval;
  return undefined;
}

function submit(): void {
  const text = textarea.value.trim();
  if (!text || !state || state.server.state !== "running") return;
  const context = state.liveRunId ? [] : mentions.take(text);
  post(context.length > 0 ? { type: "send", text, mode: "prompt", context } : { type: "send", text, mode: state.liveRunId ? "steer" : "prompt" });
  clearComposer();
}

/**
 * Empty the composer as typing would: the input event saves the empty draft and closes the `/`
 * and `@` menus, so a list that answers a query after its line was sent opens nothing.
 */
function clearComposer(): void {
  textarea.value = "";
  textarea.dispatchEvent(new Event("input"));
}

/** The composer's text as a new worktree agent: never a steer, whatever the shown run does. */
function submitWorktree(): void {
  const text = textarea.value.trim();
  if (!state || state.server.state !== "running") return;
  if (!text) {
    textarea.focus();
    return;
  }
  const context = mentions.take(text);
  post(context.length > 0 ? { type: "newWorktreeAgent", text, context } : { type: "newWorktreeAgent", text });
  clearComposer();
}

composer.addEventListener("submit", (e) => {
  e.preventDefault();
  submit();
});

textarea.addEventListener("keydown", (e) => {
  if (commands.onKeyDown(e) || mentions.onKeyDown(e)) {
    e.preventDefault();
    return;
  }
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  }
});

textarea.addEventListener("input", () => {
  persisted.draft = textarea.value;
  persist();
});

app.addEventListener("submit", (e) => {
  const form = e.target as HTMLElement;
  if (form.dataset.action === "steerChild") {
    e.preventDefault();
    const input = form.querySelector("input");
    const text = input?.value.trim() ?? "";
    if (!text) return;
    post({ type: "steerRun", runId: form.dataset.runId!, text });
    if (input) input.value = "";
    return;
  }
  if (form.dataset.action !== "answerForm") return;
  e.preventDefault();
  const input = form.querySelector("input");
  const answer = input?.value.trim() ?? "";
  if (!answer) return;
  post({ type: "answer", runId: form.dataset.runId!, questionId: form.dataset.questionId!, answer });
});

type Click = (target: HTMLElement, d: DOMStringMap, e: MouseEvent) => void;

function toggleSessions(target: HTMLElement): void {
  sessionsPanel.hidden = !sessionsPanel.hidden;
  persisted.showSessions = !sessionsPanel.hidden;
  persist();
  target.setAttribute("aria-expanded", String(!sessionsPanel.hidden));
  if (!sessionsPanel.hidden) post({ type: "refreshSessions" });
}

function copyCode(target: HTMLElement): void {
  const code = codeOf(target);
  if (!code) return;
  post({ type: "copy", text: code.text });
  target.textContent = "Copied";
  setTimeout(() => (target.textContent = "Copy"), 1500);
}

function openLocation(d: DOMStringMap, e: MouseEvent): void {
  e.preventDefault();
  const line = d.line ? Number(d.line) : undefined;
  post(line !== undefined && Number.isFinite(line) ? { type: "openLocation", uri: d.uri!, line } : { type: "openLocation", uri: d.uri! });
}

function toggleHunk(target: HTMLElement, d: DOMStringMap): void {
  const id = d.approvalId!;
  const set = memory.rejectedHunks.get(id) ?? new Set<string>();
  if (d.reject === "1") set.add(d.hunk!);
  else set.delete(d.hunk!);
  memory.rejectedHunks.set(id, set);
  const key = target.closest<HTMLElement>("[data-key]")?.dataset.key;
  if (key && model.rows.has(key)) draw(key);
}

function approve(target: HTMLElement, d: DOMStringMap): void {
  const decision = d.decision as ApprovalChoice;
  const card = target.closest<HTMLElement>(".approval");
  // What the user gave; the client sends it under the protocol's rule (protocol/client.ts).
  const intent: WebviewIntent = { type: "approve", runId: d.runId!, approvalId: d.approvalId!, decision };
  const reason = card?.querySelector<HTMLInputElement>("input.reason")?.value.trim();
  if (reason) intent.message = reason;
  const approval = approvalOf(target.closest<HTMLElement>("[data-key]")?.dataset.key);
  const edits = approval ? editsFor(approval, memory) : [];
  if (edits.length > 0) intent.edits = edits;
  // Disable the card's buttons until the resolved event re-renders it.
  card?.querySelectorAll("button").forEach((b) => (b.disabled = true));
  post(intent);
}

/** What each `data-action` element does when clicked (forms act on submit, above). */
const CLICKS: Record<string, Click> = {
  toggleSessions,
  showEarlier: () => showEarlier(),
  copyCode,
  insertCode: (target) => {
    const code = codeOf(target);
    if (code) post({ type: "insertCode", text: code.text, language: code.language });
  },
  newSession: () => {
    post({ type: "newSession" });
    textarea.focus();
  },
  selectSession: (_, d) => post({ type: "selectSession", sessionId: d.sessionId! }),
  deleteSession: (_, d) => post({ type: "deleteSession", sessionId: d.sessionId! }),
  resume: (_, d) => post({ type: "resume", runId: d.runId! }),
  cancel: (_, d) => post(d.runId ? { type: "cancel", runId: d.runId } : { type: "cancel" }),
  unsteer: (_, d) => post({ type: "unsteer", runId: d.runId!, messageId: d.messageId! }),
  openLocation: (_, d, e) => openLocation(d, e),
  openDiff: (_, d) => post({ type: "openDiff", runId: d.runId!, approvalId: d.approvalId! }),
  openChange: (_, d) => post({ type: "openChange", runId: d.runId!, path: d.path! }),
  toggleHunk,
  approve,
  answer: (_, d) => post({ type: "answer", runId: d.runId!, questionId: d.questionId!, answer: d.answer! }),
  dismissError: () => post({ type: "dismissError" }),
  dismissSandboxNotice: () => post({ type: "dismissSandboxNotice" }),
  setApiKey: () => post({ type: "setApiKey" }),
  chooseModel: () => post({ type: "chooseModel" }),
  newWorktreeAgent: () => submitWorktree(),
  useDemo: () => {
    post({ type: "useDemo" });
    textarea.focus();
  },
  restoreCheckpoint: (_, d) => post({ type: "restoreCheckpoint", runId: d.runId!, checkpointId: d.checkpointId! }),
  compareCheckpoint: (_, d) => post({ type: "compareCheckpoint", runId: d.runId!, checkpointId: d.checkpointId! }),
};

app.addEventListener("click", (e) => {
  const target = (e.target as HTMLElement).closest<HTMLElement>("[data-action]");
  if (!target || target.tagName === "FORM") return;
  const action = target.dataset.action ?? "";
  if (Object.hasOwn(CLICKS, action)) CLICKS[action]!(target, target.dataset, e);
});

// Where the reader is in the transcript, so a window reload brings them back there.
let scrollTimer: ReturnType<typeof setTimeout> | undefined;
transcript.addEventListener(
  "scroll",
  () => {
    if (scrollTimer !== undefined) clearTimeout(scrollTimer);
    scrollTimer = setTimeout(() => {
      scrollTimer = undefined;
      if (!state?.sessionId || restoredFor !== state.sessionId) return;
      if (Math.abs(transcript.scrollTop - autoScrollTop) < 1) return;
      const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
      // Still at the end while following it (rows above changed height): nothing to report.
      if (atBottom && following) {
        autoScrollTop = transcript.scrollTop;
        return;
      }
      following = atBottom;
      post({ type: "scrolled", top: Math.round(transcript.scrollTop), atBottom });
    }, 250);
  },
  { passive: true },
);

window.addEventListener("message", (event: MessageEvent<ExtensionMessage>) => {
  const msg = event.data;
  if (msg && (msg.type === "reset" || msg.type === "patch")) handle(msg);
  else if (msg && msg.type === "mentions") mentions.receive(msg);
  else if (msg && msg.type === "commands") commands.receive(msg);
});

post({ type: "ready" });
