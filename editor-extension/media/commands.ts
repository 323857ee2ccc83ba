/**
 * The composer's `/` menu: typing `/` at the start of the composer lists the commands (from the
 * server's `lovia/commands`: built-ins, the workspace's command files, the user's) with their
 * descriptions; the letters after the `/` narrow it. Picking one (Enter/Tab or a click) writes
 * `/name ` into the text; the server expands it when the prompt is sent.
 */
import type { CommandItem, CommandsMessage, WebviewIntent } from "../src/chat/messages";
import { h } from "./dom";
import { pickerKey } from "./pickerKeys";

/** `/query` as the composer's first word, up to the caret. */
const TOKEN = /^\/([^\s/]*)$/;

export class CommandPicker {
  readonly popup = h("ul", { class: "command-popup", role: "listbox", "aria-label": "Commands", hidden: true });
  private all: CommandItem[] | undefined;
  private items: CommandItem[] = [];
  private active = 0;
  private requestId = 0;
  private query: string | undefined;

  constructor(
    private readonly textarea: HTMLTextAreaElement,
    private readonly post: (intent: WebviewIntent) => void,
  ) {
    textarea.addEventListener("input", () => this.onInput());
    // closed a moment after the composer loses focus (a click on the menu lands first), unless
    // the focus came back meanwhile
    textarea.addEventListener("blur", () => setTimeout(() => document.activeElement !== textarea && this.close(), 150));
    this.popup.addEventListener("mousedown", (e) => {
      const li = (e.target as HTMLElement).closest<HTMLElement>("li[data-index]");
      if (!li) return;
      e.preventDefault();
      this.pick(Number(li.dataset.index));
    });
  }

  get open(): boolean {
    return !this.popup.hidden;
  }

  /** Keys while the menu is open; true when the key was used. */
  onKeyDown(e: KeyboardEvent): boolean {
    if (!this.open) return false;
    return pickerKey(e, this.items.length, this.active, {
      move: (index) => {
        this.active = index;
        this.draw();
      },
      pick: (index) => this.pick(index),
      close: () => this.close(),
    });
  }

  receive(msg: CommandsMessage): void {
    if (msg.requestId !== this.requestId) return;
    this.all = msg.items;
    this.filter();
  }

  private onInput(): void {
    const before = this.textarea.value.slice(0, this.textarea.selectionStart);
    const match = TOKEN.exec(before);
    if (!match) {
      this.close();
      return;
    }
    const opening = this.query === undefined;
    this.query = match[1]!;
    if (opening) {
      // read afresh each time the menu opens: a command file may have been added since
      this.all = undefined;
      this.requestId += 1;
      this.post({ type: "commandQuery", requestId: this.requestId });
      return;
    }
    this.filter();
  }

  private filter(): void {
    if (this.query === undefined || this.all === undefined) return;
    const query = this.query.toLowerCase();
    const starts = this.all.filter((c) => c.name.toLowerCase().startsWith(query));
    const inside = this.all.filter((c) => !starts.includes(c) && c.name.toLowerCase().includes(query));
    this.items = [...starts, ...inside];
    this.active = 0;
    this.draw();
  }

  private pick(index: number): void {
    const item = this.items[index];
    if (!item) return;
    const rest = this.textarea.value.slice(this.textarea.selectionStart).replace(/^\S*/, "");
    const insert = `/${item.name} `;
    this.textarea.value = insert + rest.replace(/^\s+/, "");
    this.textarea.setSelectionRange(insert.length, insert.length);
    this.close();
    this.textarea.dispatchEvent(new Event("input"));
    this.textarea.focus();
  }

  private close(): void {
    this.popup.hidden = true;
    this.popup.replaceChildren();
    this.items = [];
    this.query = undefined;
  }

  private draw(): void {
    this.popup.hidden = this.items.length === 0;
    this.popup.replaceChildren(
      ...this.items.map((c, i) =>
        h(
          "li",
          { role: "option", class: `mention-option command-option${i === this.active ? " active" : ""}`, "data-index": i, "aria-selected": String(i === this.active), title: c.description },
          h("span", { class: "mention-label command-name" }, `/${c.name}`),
          c.argumentHint ? h("span", { class: "command-hint" }, c.argumentHint) : null,
          h("span", { class: "mention-detail command-description" }, c.description),
          c.source === "built-in" ? null : h("span", { class: `command-source source-${c.source}` }, c.source),
        ),
      ),
    );
  }
}
