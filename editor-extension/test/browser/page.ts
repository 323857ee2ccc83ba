/**
 * The chat webview in headless Chromium, as VS Code serves it: the page from html.ts with the
 * built dist/webview.js and dist/webview.css, a theme's variables, and an `acquireVsCodeApi`
 * stub that records what the UI posts. Shared by the browser tests and the webview benchmark.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { renderWebviewHtml } from "../../src/chat/html";
import { checkWebviewIntent, type ExtensionMessage, type WebviewIntent } from "../../src/chat/messages";

export const root = fileURLToPath(new URL("../../", import.meta.url));
export const artifacts = `${root}test/artifacts`;
const CHROMIUM = process.env.LOVIA_CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * Posts a message to the page as the extension would and waits until the webview has handled
 * it and drawn the result: window.postMessage delivers later but in order, so a marker posted
 * after the message arrives once the (synchronous) handler has run; two animation frames later
 * the rows have their real sizes (a row is `content-visibility: auto`, laid out at an estimated
 * 48 px until a frame finds it on screen).
 */
export async function deliver(page: Page, message: unknown): Promise<void> {
  await page.evaluate(
    (m) =>
      new Promise<void>((resolve) => {
        const marker = `delivered-${Math.random()}`;
        const seen = (event: MessageEvent): void => {
          if (event.data !== marker) return;
          window.removeEventListener("message", seen);
          requestAnimationFrame(() => requestAnimationFrame(() => resolve()));
        };
        window.addEventListener("message", seen);
        window.postMessage(m, "*");
        window.postMessage(marker, "*");
      }),
    JSON.parse(JSON.stringify(message)) as unknown,
  );
}

export type Theme = "dark" | "light" | "high-contrast";
/** VS Code's body class for each theme kind (the webview gets it too). */
const BODY_CLASS: Record<Theme, string> = { dark: "vscode-dark", light: "vscode-light", "high-contrast": "vscode-high-contrast" };

export interface WebviewPage {
  page: Page;
  origin: string;
  /** Page errors seen so far. */
  errors: string[];
  /** Load the page again (a fresh webview) in a theme. */
  load(theme?: Theme): Promise<void>;
  post(message: ExtensionMessage): Promise<void>;
  /** What the UI posted so far, each checked by {@link validIntents}. */
  posted(): Promise<WebviewIntent[]>;
  clearPosted(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The messages the real webview posted, each passed through the extension's validator (which
 * would drop it otherwise): every browser test that reads the posts checks them this way.
 */
export function validIntents(posted: unknown[]): WebviewIntent[] {
  for (const message of posted) {
    const problem = checkWebviewIntent(message);
    if (problem !== undefined) throw new Error(`the webview posted a message the extension rejects (${problem}): ${JSON.stringify(message)}`);
  }
  return posted as WebviewIntent[];
}

export async function openWebview(options: { width?: number; height?: number; ignoreHTTPSErrors?: boolean } = {}): Promise<WebviewPage> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set LOVIA_CHROMIUM).`);
  }
  if (!existsSync(`${root}dist/webview.js`)) execFileSync(process.execPath, ["esbuild.mjs"], { cwd: root, stdio: "inherit" });
  mkdirSync(artifacts, { recursive: true });
  const nonce = "dGVzdC1ub25jZS0xMjM0NQ==";
  let origin = "";
  const server: Server = createServer((req, res) => {
    const url = req.url ?? "";
    if (url === "/" || url === "/index.html") {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(renderWebviewHtml({ cspSource: origin, nonce, scriptUri: `${origin}/dist/webview.js`, styleUri: `${origin}/dist/webview.css` }));
      return;
    }
    const dist = /^\/dist\/([\w.-]+\.(js|css))$/.exec(url);
    const theme = /^\/theme-([\w-]+)\.css$/.exec(url);
    const file = dist ? `${root}dist/${dist[1]}` : theme ? `${root}test/browser/theme-${theme[1]}.css` : undefined;
    if (!file || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file.endsWith(".css") ? "text/css" : "text/javascript" });
    res.end(readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
  // ignoreHTTPSErrors: a test's self-signed HTTPS server then counts as any real site would.
  const page = await browser.newPage({ viewport: { width: options.width ?? 420, height: options.height ?? 900 }, ignoreHTTPSErrors: options.ignoreHTTPSErrors ?? false });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.addInitScript(() => {
    const w = window as unknown as Record<string, unknown>;
    w.__posted = [];
    w.__violations = [];
    w.__state = undefined;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => (w.__posted as unknown[]).push(m),
      getState: () => w.__state,
      setState: (s: unknown) => {
        w.__state = s;
      },
    });
    document.addEventListener("securitypolicyviolation", (e) => (w.__violations as string[]).push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const api: WebviewPage = {
    page,
    origin,
    errors,
    async load(theme: Theme = "dark") {
      await page.goto(`${origin}/index.html`);
      await page.addStyleTag({ url: `${origin}/theme-${theme}.css` });
      await page.evaluate((cls) => document.body.classList.add(cls), BODY_CLASS[theme]);
      await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
    },
    async post(message) {
      await deliver(page, message);
    },
    posted: async () => validIntents(await page.evaluate(() => (window as unknown as { __posted: unknown[] }).__posted.slice())),
    clearPosted: () =>
      page.evaluate(() => {
        (window as unknown as { __posted: unknown[] }).__posted.length = 0;
      }),
    async close() {
      await browser.close();
      await new Promise((r) => server.close(r));
    },
  };
  return api;
}
