/** Inline SVG icons (static, trusted strings) in the style of VS Code's codicons. */
import type { ToolKind } from "../src/protocol/types";

const svg = (body: string) =>
  `<svg class="icon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" focusable="false" fill="none" stroke="currentColor" stroke-width="1.2" stroke-linecap="round" stroke-linejoin="round">${body}</svg>`;

export const TOOL_ICONS: Record<ToolKind, string> = {
  read: svg('<path d="M4 1.5h5l3 3v10H4z"/><path d="M9 1.5v3h3M6 8h4M6 10.5h4"/>'),
  edit: svg('<path d="M10.5 2.5l3 3-7.5 7.5H3v-3z"/><path d="M9 4l3 3"/>'),
  delete: svg('<path d="M3 4.5h10M6 4.5V3h4v1.5M4.5 4.5l.7 9h5.6l.7-9"/>'),
  move: svg('<path d="M2 8h11M9.5 4.5L13 8l-3.5 3.5"/>'),
  search: svg('<circle cx="6.5" cy="6.5" r="4"/><path d="M9.5 9.5L14 14"/>'),
  execute: svg('<rect x="1.5" y="2.5" width="13" height="11" rx="1"/><path d="M4 6l2 2-2 2M8 10.5h4"/>'),
  fetch: svg('<circle cx="8" cy="8" r="6"/><path d="M2 8h12M8 2c2 2 2 10 0 12M8 2c-2 2-2 10 0 12"/>'),
  think: svg('<path d="M5.5 10.5C4 9.5 3.5 8.3 3.5 7a4.5 4.5 0 019 0c0 1.3-.5 2.5-2 3.5v2h-5z"/><path d="M6.5 14.5h3"/>'),
  other: svg('<circle cx="8" cy="8" r="2"/><path d="M8 1.5v2M8 12.5v2M1.5 8h2M12.5 8h2M3.4 3.4l1.4 1.4M11.2 11.2l1.4 1.4M3.4 12.6l1.4-1.4M11.2 4.8l1.4-1.4"/>'),
};

export const ICONS = {
  shield: svg('<path d="M8 1.5l5.5 2v4c0 3.5-2.5 6-5.5 7-3-1-5.5-3.5-5.5-7v-4z"/>'),
  question: svg('<circle cx="8" cy="8" r="6.5"/><path d="M6.2 6.2a1.9 1.9 0 113 1.6c-.8.5-1.2.9-1.2 1.7M8 11.5v.2"/>'),
  check: svg('<path d="M3 8.5l3 3 7-7"/>'),
  stop: svg('<rect x="4" y="4" width="8" height="8" rx="1"/>'),
  send: svg('<path d="M2 8l12-5.5L10 14l-2-4.5z"/><path d="M8 9.5L14 2.5"/>'),
  steer: svg('<path d="M3 13C5 8 8 5 13 3M9 3h4v4"/>'),
  history: svg('<path d="M2.5 8a5.5 5.5 0 101.6-3.9M2.5 2.5v2.5H5"/><path d="M8 5v3l2 1.5"/>'),
  plus: svg('<path d="M8 3v10M3 8h10"/>'),
  trash: svg('<path d="M3 4.5h10M6 4.5V3h4v1.5M4.5 4.5l.7 9h5.6l.7-9"/>'),
  play: svg('<path d="M5 3l8 5-8 5z"/>'),
  diff: svg('<path d="M5 2v7M1.5 5.5h7M10 12.5h4.5M10.5 2.5h3v3"/>'),
  close: svg('<path d="M4 4l8 8M12 4l-8 8"/>'),
  branch: svg('<circle cx="4.5" cy="3.5" r="1.5"/><circle cx="4.5" cy="12.5" r="1.5"/><circle cx="11.5" cy="5.5" r="1.5"/><path d="M4.5 5v6M11.5 7c0 2.5-7 2-7 4"/>'),
  warning: svg('<path d="M8 2L14.5 13.5h-13z"/><path d="M8 6.5v3.5M8 12v.2"/>'),
};
