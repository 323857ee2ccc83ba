/**
 * Code blocks in rendered markdown: a toolbar (language, Copy, and Insert at cursor for
 * answers) and syntax highlighting. The highlighter is a separate bundle (dist/highlight.js)
 * loaded by a nonce'd script element the first time a block needs it, so the strict CSP
 * holds and panels without code never load it.
 */
import type { Highlighter } from "./highlight";
import { h } from "./dom";

declare global {
  interface Window {
    loviaHighlighter?: Highlighter;
  }
}

const waiting = new Set<HTMLElement>();
const cache = new Map<string, string | undefined>();
const CACHE_LIMIT = 300;
let requested = false;

function languageOf(code: HTMLElement): string {
  for (const cls of Array.from(code.classList)) if (cls.startsWith("language-")) return cls.slice("language-".length);
  return "";
}

function load(): void {
  if (requested) return;
  requested = true;
  const self = document.querySelector<HTMLScriptElement>('script[src*="webview.js"]');
  if (!self) return;
  const script = document.createElement("script");
  script.nonce = self.nonce;
  script.src = self.src.replace(/webview\.js(?=$|[?#])/, "highlight.js");
  document.head.append(script);
}

window.addEventListener("lovia-highlighter", () => {
  for (const code of waiting) if (code.isConnected) paint(code);
  waiting.clear();
});

function paint(code: HTMLElement): void {
  const highlighter = window.loviaHighlighter;
  const language = languageOf(code);
  if (!highlighter || !language) return;
  const text = code.textContent ?? "";
  const key = `${language}\u0000${text}`;
  let html = cache.get(key);
  if (!cache.has(key)) {
    html = highlighter.highlight(text, language);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(key, html);
  }
  // highlight.js escapes the text; its output is spans with hljs-* classes only.
  if (html !== undefined) {
    code.innerHTML = html;
    code.classList.add("hljs");
  }
}

/** Give every `pre > code` in `root` its toolbar and highlighting. */
export function decorateCode(root: HTMLElement, options: { insert: boolean }): void {
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    const code = pre.querySelector("code");
    if (!code || pre.parentElement?.classList.contains("code-block")) continue;
    const language = languageOf(code);
    const bar = h(
      "div",
      { class: "code-bar" },
      h("span", { class: "code-lang" }, language),
      options.insert ? h("button", { type: "button", class: "code-button", "data-action": "insertCode", title: "Insert at the cursor in the editor" }, "Insert") : null,
      h("button", { type: "button", class: "code-button", "data-action": "copyCode", title: "Copy to the clipboard" }, "Copy"),
    );
    const block = h("div", { class: "code-block" });
    pre.replaceWith(block);
    block.append(bar, pre);
    if (!language) continue;
    if (window.loviaHighlighter) paint(code);
    else {
      waiting.add(code);
      load();
    }
  }
}

/** The text and language of the code block a toolbar button belongs to. */
export function codeOf(button: HTMLElement): { text: string; language: string } | undefined {
  const code = button.closest(".code-block")?.querySelector("code");
  if (!code) return undefined;
  return { text: code.textContent ?? "", language: languageOf(code) };
}
