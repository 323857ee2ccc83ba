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

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} https: data:`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "form-action 'none'",
    "frame-src 'none'",
    "base-uri 'none'",
  ].join("; ");
}

export function renderWebviewHtml(o: WebviewHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(o.cspSource, o.nonce))}">
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
