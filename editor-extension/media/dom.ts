/** Tiny DOM builder: text always goes through textContent, never innerHTML. */

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | null>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return el;
}

/** A trusted static SVG string (from icons.ts) as a node. */
export function icon(svg: string): Element {
  const t = document.createElement("template");
  t.innerHTML = svg;
  return t.content.firstElementChild ?? document.createElement("span");
}

/** Sanitised HTML (from markdown.ts) into a container. */
export function htmlBlock(className: string, sanitizedHtml: string): HTMLDivElement {
  const div = document.createElement("div");
  div.className = className;
  div.innerHTML = sanitizedHtml;
  return div;
}
