/**
 * The chat webview. It renders the {@link ChatViewState} the extension posts and posts
 * user intents back; it holds no source of truth (only the composer draft and which
 * sections are expanded).
 */
import type { ChatViewState, ExtensionMessage, WebviewIntent } from "../src/chat/messages";
import type { RunView } from "../src/protocol/runView";
import type { ApprovalDecision } from "../src/protocol/types";
import { h, icon } from "./dom";
import { ICONS } from "./icons";
import { renderItem, renderRunFooter, renderSessions, renderSteers, renderTodos, renderUsage, type UiMemory } from "./render";
import { nestedRev, renderChildren } from "./subagents";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface Persisted {
  draft?: string;
  showSessions?: boolean;
}

const vscode = acquireVsCodeApi();
const persisted: Persisted = (vscode.getState() as Persisted | undefined) ?? {};
const memory: UiMemory = { openDetails: new Set() };

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
const usageArea = h("div", { class: "usage-area" });
const steersArea = h("div", { class: "steers-area" });
const textarea = h("textarea", {
  class: "composer-input",
  rows: 3,
  "aria-label": "Message",
  placeholder: "Ask lovia…",
});
textarea.value = persisted.draft ?? "";
const sendButton = h("button", { type: "submit", class: "primary send", "aria-label": "Send" });
const stopButton = h("button", { type: "button", class: "secondary danger stop", "data-action": "cancel", hidden: true }, icon(ICONS.stop), "Stop");
const composerHint = h("div", { class: "composer-hint muted" });
const composer = h(
  "form",
  { class: "composer", "aria-label": "Composer" },
  textarea,
  h("div", { class: "composer-row" }, composerHint, h("div", { class: "composer-buttons" }, stopButton, sendButton)),
);
app.append(header, sessionsPanel, banner, todosArea, transcript, usageArea, steersArea, composer);

let state: ChatViewState | undefined;
/** The session whose scroll position was restored (once per session shown). */
let restoredFor: string | undefined;
/** Where the view last scrolled itself: scroll events that land there are not the reader's. */
let autoScrollTop = -1;
/** Rendered transcript nodes by key, with the rev they were rendered at. */
const rendered = new Map<string, { rev: number; el: HTMLElement }>();

// ---------------------------------------------------------------------------
// Rendering

function activeRun(s: ChatViewState): RunView | undefined {
  if (s.liveRunId) return s.runs.find((r) => r.runId === s.liveRunId);
  return s.runs[s.runs.length - 1];
}

function renderHeader(s: ChatViewState): void {
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

function renderBanner(s: ChatViewState): void {
  if (!s.error) {
    banner.replaceChildren();
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

function renderTranscript(s: ChatViewState): void {
  const stickToBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  const wanted: HTMLElement[] = [];
  const keys = new Set<string>();
  for (const run of s.runs) {
    for (const item of run.items) {
      const key = `${run.runId}:${item.type}:${item.id}`;
      keys.add(key);
      const have = rendered.get(key);
      const rev = item.rev + nestedRev(s, run, item, memory);
      if (have && have.rev === rev) {
        wanted.push(have.el);
        continue;
      }
      const el = renderItem(run, item, memory);
      const nested = renderChildren(s, run, item, memory);
      if (nested) el.append(nested);
      el.dataset.key = key;
      // Keep a half-typed rejection reason / answer across re-renders of the same card.
      if (have) carryInputs(have.el, el);
      rendered.set(key, { rev, el });
      wanted.push(el);
    }
    const footerKey = `${run.runId}:footer:${run.status}:${run.resumable}`;
    const footer = renderRunFooter(run);
    if (footer) {
      keys.add(footerKey);
      const have = rendered.get(footerKey);
      const el = have?.el ?? footer;
      rendered.set(footerKey, { rev: 0, el });
      wanted.push(el);
    }
  }
  for (const key of [...rendered.keys()]) if (!keys.has(key)) rendered.delete(key);
  if (wanted.length === 0) {
    transcript.replaceChildren(renderEmpty(s));
  } else {
    // Drop what is no longer wanted (including a card's previous rendering), then put the
    // rest in order, comparing with the live children: few DOM moves, never a lost card.
    const keep = new Set<Element>(wanted);
    for (const child of Array.from(transcript.children)) if (!keep.has(child)) child.remove();
    wanted.forEach((el, i) => {
      if (transcript.children[i] !== el) transcript.insertBefore(el, transcript.children[i] ?? null);
    });
  }
  if (s.sessionId !== undefined && restoredFor !== s.sessionId && wanted.length > 0) {
    // First draw of this session: go where the reader was (kept across reloads), else the end.
    restoredFor = s.sessionId;
    transcript.scrollTop = s.atBottom === false && s.scrollTop !== undefined ? s.scrollTop : transcript.scrollHeight;
    autoScrollTop = transcript.scrollTop;
  } else if (stickToBottom) {
    transcript.scrollTop = transcript.scrollHeight;
    autoScrollTop = transcript.scrollTop;
  }
}

function carryInputs(from: HTMLElement, to: HTMLElement): void {
  const old = from.querySelectorAll("input");
  const next = to.querySelectorAll("input");
  old.forEach((input, i) => {
    const target = next[i];
    if (target && input.value) target.value = input.value;
  });
}

function renderEmpty(s: ChatViewState): HTMLElement {
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

function renderComposer(s: ChatViewState): void {
  const live = s.liveRunId !== undefined;
  composer.classList.toggle("steering", live);
  textarea.placeholder = live ? "Steer the running agent… (delivered at its next turn)" : "Ask lovia… (Enter to send, Shift+Enter for a new line)";
  textarea.setAttribute("aria-label", live ? "Steer message" : "Message");
  sendButton.replaceChildren(icon(live ? ICONS.steer : ICONS.send), live ? "Steer" : "Send");
  sendButton.setAttribute("aria-label", live ? "Send steer message" : "Send");
  sendButton.disabled = s.server.state !== "running";
  stopButton.hidden = !live;
  const run = live ? s.runs.find((r) => r.runId === s.liveRunId) : undefined;
  composerHint.textContent = run?.activity ? `● ${run.activity}` : "";
}

function render(s: ChatViewState): void {
  state = s;
  renderHeader(s);
  sessionsPanel.replaceChildren(renderSessions(s));
  renderBanner(s);
  todosArea.replaceChildren(...[renderTodos(activeRun(s))].filter((x): x is HTMLElement => x !== null));
  renderTranscript(s);
  usageArea.replaceChildren(...[renderUsage(activeRun(s))].filter((x): x is HTMLElement => x !== null));
  steersArea.replaceChildren(...[renderSteers(s.pendingSteers)].filter((x): x is HTMLElement => x !== null));
  renderComposer(s);
}

// ---------------------------------------------------------------------------
// Intents

function submit(): void {
  const text = textarea.value.trim();
  if (!text || !state || state.server.state !== "running") return;
  post({ type: "send", text, mode: state.liveRunId ? "steer" : "prompt" });
  textarea.value = "";
  persisted.draft = "";
  persist();
}

composer.addEventListener("submit", (e) => {
  e.preventDefault();
  submit();
});

textarea.addEventListener("keydown", (e) => {
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

app.addEventListener("click", (e) => {
  const target = (e.target as HTMLElement).closest<HTMLElement>("[data-action]");
  if (!target || target.tagName === "FORM") return;
  const d = target.dataset;
  switch (d.action) {
    case "toggleSessions": {
      sessionsPanel.hidden = !sessionsPanel.hidden;
      persisted.showSessions = !sessionsPanel.hidden;
      persist();
      target.setAttribute("aria-expanded", String(!sessionsPanel.hidden));
      if (!sessionsPanel.hidden) post({ type: "refreshSessions" });
      return;
    }
    case "newSession":
      post({ type: "newSession" });
      textarea.focus();
      return;
    case "selectSession":
      post({ type: "selectSession", sessionId: d.sessionId! });
      return;
    case "deleteSession":
      post({ type: "deleteSession", sessionId: d.sessionId! });
      return;
    case "resume":
      post({ type: "resume", runId: d.runId! });
      return;
    case "cancel":
      post(d.runId ? { type: "cancel", runId: d.runId } : { type: "cancel" });
      return;
    case "unsteer":
      post({ type: "unsteer", runId: d.runId!, messageId: d.messageId! });
      return;
    case "openLocation": {
      e.preventDefault();
      const line = d.line ? Number(d.line) : undefined;
      post(line !== undefined && Number.isFinite(line) ? { type: "openLocation", uri: d.uri!, line } : { type: "openLocation", uri: d.uri! });
      return;
    }
    case "openDiff":
      post({ type: "openDiff", runId: d.runId!, approvalId: d.approvalId! });
      return;
    case "approve": {
      const decision = d.decision as ApprovalDecision;
      const card = target.closest<HTMLElement>(".approval");
      const reason = card?.querySelector<HTMLInputElement>("input.reason")?.value.trim() ?? "";
      const intent: WebviewIntent = { type: "approve", runId: d.runId!, approvalId: d.approvalId!, decision };
      if (decision.startsWith("reject") && reason) intent.message = reason;
      // Disable the card's buttons until the resolved event re-renders it.
      card?.querySelectorAll("button").forEach((b) => (b.disabled = true));
      post(intent);
      return;
    }
    case "answer":
      post({ type: "answer", runId: d.runId!, questionId: d.questionId!, answer: d.answer! });
      return;
    case "dismissError":
      post({ type: "dismissError" });
      return;
    case "setApiKey":
      post({ type: "setApiKey" });
      return;
    case "chooseModel":
      post({ type: "chooseModel" });
      return;
    case "useDemo":
      post({ type: "useDemo" });
      textarea.focus();
      return;
  }
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
      post({ type: "scrolled", top: Math.round(transcript.scrollTop), atBottom });
    }, 250);
  },
  { passive: true },
);

window.addEventListener("message", (event: MessageEvent<ExtensionMessage>) => {
  const msg = event.data;
  if (msg && msg.type === "state") render(msg.state);
});

post({ type: "ready" });
