/** The chat webview's HTML shell. Pure, so the browser test loads exactly this page. */

export interface WebviewHtmlOptions {
  /** `webview.cspSource`: the origin the webview may load its own resources from. */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

function attr(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/**
 * The page may load only its own script and stylesheet (nonce'd, from `cspSource`). Nothing
 * else: no images, fonts, media, frames, workers or connections, from anywhere. lovia's UI
 * needs none of them (its icons are inline SVG, its fonts the editor's), and anything that
 * loads could be pointed by model text at a URL that carries data out with no click.
 * `default-src 'none'` already covers the fetch directives left out; the ones listed say so
 * explicitly, and `form-action`/`base-uri`/`frame-ancestors` are not covered by it.
 */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    "img-src 'none'",
    "media-src 'none'",
    "font-src 'none'",
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "child-src 'none'",
    "worker-src 'none'",
    "manifest-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join("; ");
}

export function renderWebviewHtml(o: WebviewHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(o.cspSource, o.nonce))}">
<meta http-equiv="x-dns-prefetch-control" content="off">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(o.styleUri)}" nonce="${attr(o.nonce)}">
<title>lovia</title>
</head>
<body>
<div id="app" class="app" aria-live="off"></div>
<script nonce="${attr(o.nonce)}" src="${attr(o.scriptUri)}"></script>
</body>
</html>`;
}

/** A random nonce for the CSP (base64 of 16 random bytes). */
export function makeNonce(random: (size: number) => Uint8Array): string {
  return Buffer.from(random(16)).toString("base64");
}
