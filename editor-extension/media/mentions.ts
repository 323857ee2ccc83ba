/**
 * `@` mentions in the composer: typing `@` and a few letters asks the extension for files,
 * folders, workspace symbols, the selection and Problems; picking one (Enter/Tab or a click)
 * writes `@label` into the text and attaches the mention as a chip. A send takes the chips
 * whose `@label` is still in the text.
 */
import type { Mention, MentionsMessage, WebviewIntent } from "../src/chat/messages";
import { h, icon } from "./dom";
import { ICONS, TOOL_ICONS } from "./icons";
import { pickerKey } from "./pickerKeys";

/** The `@query` just before the caret (the query may be empty). */
const TOKEN = /(?:^|\s)@([^\s@]*)$/;

const KIND_ICON: Record<Mention["kind"], string> = {
  file: TOOL_ICONS.read,
  folder: TOOL_ICONS.search,
  symbol: TOOL_ICONS.other,
  selection: TOOL_ICONS.edit,
  problems: ICONS.question,
};

export function mentionIcon(kind: Mention["kind"]): Element {
  return icon(KIND_ICON[kind] ?? TOOL_ICONS.other);
}

export class MentionPicker {
  readonly popup = h("ul", { class: "mention-popup", role: "listbox", "aria-label": "Mentions", hidden: true });
  readonly chips = h("div", { class: "mention-chips", "aria-label": "Attached context" });
  private attached: Mention[] = [];
  private items: Mention[] = [];
  private active = 0;
  private requestId = 0;
  private start = -1;

  constructor(
    private readonly textarea: HTMLTextAreaElement,
    private readonly post: (intent: WebviewIntent) => void,
  ) {
    textarea.addEventListener("input", () => this.onInput());
    textarea.addEventListener("blur", () => setTimeout(() => this.close(), 150));
    this.popup.addEventListener("mousedown", (e) => {
      const li = (e.target as HTMLElement).closest<HTMLElement>("li[data-index]");
      if (!li) return;
      e.preventDefault();
      this.pick(Number(li.dataset.index));
    });
    this.chips.addEventListener("click", (e) => {
      const button = (e.target as HTMLElement).closest<HTMLElement>("button[data-chip]");
      if (!button) return;
      this.attached.splice(Number(button.dataset.chip), 1);
      this.drawChips();
      textarea.focus();
    });
  }

  get open(): boolean {
    return !this.popup.hidden;
  }

  /** Keys while the popup is open; true when the key was used. */
  onKeyDown(e: KeyboardEvent): boolean {
    if (!this.open) return false;
    return pickerKey(e, this.items.length, this.active, {
      move: (index) => {
        this.active = index;
        this.drawPopup();
      },
      pick: (index) => this.pick(index),
      close: () => this.close(),
    });
  }

  receive(msg: MentionsMessage): void {
    if (msg.requestId !== this.requestId || this.start < 0) return;
    this.items = msg.items;
    this.active = 0;
    this.drawPopup();
  }

  /** The mentions to send with `text` (those whose `@label` is still there); clears them. */
  take(text: string): Mention[] {
    const out = this.attached.filter((m) => text.includes(`@${m.label}`));
    this.attached = [];
    this.drawChips();
    return out;
  }

  private onInput(): void {
    const caret = this.textarea.selectionStart;
    const before = this.textarea.value.slice(0, caret);
    const match = TOKEN.exec(before);
    if (!match) {
      this.close();
      return;
    }
    this.start = caret - match[1]!.length - 1;
    this.requestId += 1;
    this.post({ type: "mentionQuery", query: match[1]!, requestId: this.requestId });
  }

  private pick(index: number): void {
    const item = this.items[index];
    if (!item || this.start < 0) return;
    const value = this.textarea.value;
    const caret = this.textarea.selectionStart;
    const insert = `@${item.label} `;
    this.textarea.value = value.slice(0, this.start) + insert + value.slice(caret);
    const at = this.start + insert.length;
    this.textarea.setSelectionRange(at, at);
    if (!this.attached.some((m) => m.kind === item.kind && m.uri === item.uri && m.label === item.label)) this.attached.push(item);
    this.close();
    this.drawChips();
    this.textarea.dispatchEvent(new Event("input"));
    this.textarea.focus();
  }

  private close(): void {
    this.popup.hidden = true;
    this.popup.replaceChildren();
    this.items = [];
    this.start = -1;
  }

  private drawPopup(): void {
    this.popup.hidden = this.items.length === 0;
    this.popup.replaceChildren(
      ...this.items.map((m, i) =>
        h(
          "li",
          { role: "option", class: `mention-option${i === this.active ? " active" : ""}`, "data-index": i, "aria-selected": String(i === this.active) },
          mentionIcon(m.kind),
          h("span", { class: "mention-label" }, m.label),
          m.detail ? h("span", { class: "mention-detail" }, m.detail) : null,
        ),
      ),
    );
  }

  private drawChips(): void {
    this.chips.replaceChildren(
      ...this.attached.map((m, i) =>
        h(
          "span",
          { class: `chip chip-${m.kind}`, title: m.detail ?? m.label },
          mentionIcon(m.kind),
          h("span", { class: "chip-label" }, m.label),
          h("button", { type: "button", class: "chip-remove", "data-chip": i, "aria-label": `Remove ${m.label}` }, "×"),
        ),
      ),
    );
  }
}
