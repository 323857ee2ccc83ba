import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";
import type { RendererRule as RenderRule } from "markdown-it";

/**
 * Model text → safe HTML. markdown-it runs with raw HTML disabled (so `<script>` and
 * `<img onerror=…>` stay text), and the result goes through DOMPurify anyway, with
 * links restricted to http(s)/mailto.
 *
 * Nothing in an answer may make the panel load anything: an image the model names could carry
 * file contents in its URL and would be fetched the moment it renders, with no click. So
 * images (inline, reference-style, inside links) become a link with the host named, never an
 * `<img>`; the sanitizer forbids every element that loads a resource; and the page's CSP
 * (src/chat/html.ts) refuses remote loads in case all of that were bypassed.
 */
const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });

const SAFE_LINK = /^(https?:|mailto:)/i;
md.validateLink = (url: string) => SAFE_LINK.test(url.trim());

/** Where an image would have come from, as the reader should see it (punycode, no userinfo). */
export function imageHost(src: string): string | undefined {
  try {
    const url = new URL(src);
    return url.protocol === "http:" || url.protocol === "https:" ? url.host : undefined;
  } catch {
    return undefined;
  }
}

const image: RenderRule = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  const src = String(token.attrGet("src") ?? "");
  const esc = md.utils.escapeHtml;
  const alt = self.renderInlineAsText(token.children ?? [], options, env).trim() || "image";
  const host = imageHost(src);
  const note = `<span class="remote-image-host">(${host ? `image: ${esc(host)}` : "image not loaded"})</span>`;
  const title = `Image not loaded: ${src}`;
  // An image inside a link: the link already is the way out, a nested anchor is not valid HTML.
  let depth = 0;
  for (let i = 0; i < idx; i++) {
    if (tokens[i]!.type === "link_open") depth++;
    else if (tokens[i]!.type === "link_close") depth--;
  }
  const label = depth > 0 ? esc(alt) : `<a href="${esc(src)}">${esc(alt)}</a>`;
  return `<span class="remote-image" title="${esc(title)}">${label} ${note}</span>`;
};
md.renderer.rules.image = image;

/** Elements that fetch something by themselves (or hold content that could). */
const LOADING_TAGS = [
  "img", "image", "picture", "source", "video", "audio", "track", "svg", "math", "link", "meta", "base",
  "object", "embed", "iframe", "frame", "frameset", "portal", "applet", "input", "style", "form",
  "button", "textarea", "select",
];

const PURIFY_CONFIG = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: LOADING_TAGS,
  FORBID_ATTR: ["style", "src", "srcset", "background", "poster", "action", "formaction", "ping", "lowsrc", "dynsrc"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
};

export function renderMarkdown(text: string): string {
  const html = md.render(text);
  return DOMPurify.sanitize(html, PURIFY_CONFIG) as unknown as string;
}
