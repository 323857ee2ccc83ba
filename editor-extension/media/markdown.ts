import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";

/**
 * Model text → safe HTML. markdown-it runs with raw HTML disabled (so `<script>` and
 * `<img onerror=…>` stay text), and the result goes through DOMPurify anyway, with
 * links restricted to http(s)/mailto.
 */
const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });

const SAFE_LINK = /^(https?:|mailto:)/i;
md.validateLink = (url: string) => SAFE_LINK.test(url.trim());

const PURIFY_CONFIG = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
};

export function renderMarkdown(text: string): string {
  const html = md.render(text);
  return DOMPurify.sanitize(html, PURIFY_CONFIG) as unknown as string;
}
