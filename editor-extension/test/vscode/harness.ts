/**
 * A real VS Code for end-to-end tests: code-server (installed once by scripts/code-server.sh)
 * with the packaged lovia.vsix, driven through Debian's Chromium with playwright-core.
 *
 * Every window gets its own user-data, extensions, XDG and workspace folders, a free port, and
 * its own process group (killed whole at the end: code-server leaves children behind
 * otherwise). Each step can save a screenshot into test/artifacts/vscode/<scenario>/; on
 * failure the code-server and extension logs (the lovia output channel) are copied there too.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type FrameLocator, type Locator, type Page } from "playwright-core";

export const EXTENSION_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const REPO = join(EXTENSION_DIR, "..");
export const ARTIFACTS = join(EXTENSION_DIR, "test", "artifacts", "vscode");
export const VSIX = process.env.LOVIA_VSIX ?? join(EXTENSION_DIR, "lovia.vsix");
const CHROMIUM = process.env.LOVIA_CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"];

/** The repository's Python with lovia installed (skips the first-run install). */
export function repoPython(): string {
  const fromEnv = process.env.LOVIA_PYTHON;
  if (fromEnv) return fromEnv;
  const venv = join(REPO, ".venv", "bin", "python");
  if (existsSync(venv)) return venv;
  throw new Error("No Python with lovia: set LOVIA_PYTHON or create the repository's .venv");
}

let launcher: string | undefined;

/** The code-server launcher, built into the cache on first use. */
export function codeServer(): string {
  if (launcher) return launcher;
  const out = execFileSync("bash", [join(EXTENSION_DIR, "scripts", "code-server.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  launcher = out.trim().split("\n").at(-1)!;
  return launcher;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll `check` until it returns a value (not undefined/false) or `timeoutMs` passes. */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 60_000, everyMs = 250): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`);
}

export interface WindowOptions {
  /** Folder name under artifacts/vscode/. */
  scenario: string;
  /** Files of the workspace folder, by relative path. */
  files: Record<string, string>;
  /** `<user-data-dir>/Machine/settings.json` (machine-scoped settings such as lovia.pythonPath). */
  machineSettings?: Record<string, unknown>;
  /** `<user-data-dir>/User/settings.json`. */
  userSettings?: Record<string, unknown>;
  /** Let the browser accept any certificate (a test's self-signed HTTPS server counts as a real site). */
  ignoreHTTPSErrors?: boolean;
  /** Environment for code-server and so the lovia server (e.g. a local fake provider's URL and key). */
  env?: Record<string, string>;
}

const BASE_USER_SETTINGS = {
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "security.workspace.trust.enabled": false,
  "chat.disableAIFeatures": true,
  "window.restoreWindows": "none",
  "editor.minimap.enabled": false,
  "files.autoSave": "off",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
};

/** One code-server window with lovia installed, its folders and processes. */
export class VsCodeWindow {
  readonly root: string;
  readonly workspace: string;
  readonly userData: string;
  readonly extensions: string;
  readonly artifacts: string;
  private readonly env: NodeJS.ProcessEnv;
  private server?: ChildProcess;
  private browser?: Browser;
  page!: Page;
  port = 0;
  private step = 0;
  /** Milliseconds since the epoch when `--install-extension` started. */
  installStartedAt = 0;

  constructor(readonly options: WindowOptions) {
    this.root = mkdtempSync(join(tmpdir(), `lovia-vscode-${options.scenario}-`));
    this.workspace = join(this.root, "workspace");
    this.userData = join(this.root, "user-data");
    this.extensions = join(this.root, "extensions");
    this.artifacts = join(ARTIFACTS, options.scenario);
    rmSync(this.artifacts, { recursive: true, force: true });
    mkdirSync(this.artifacts, { recursive: true });
    for (const d of [this.workspace, this.extensions, join(this.userData, "User"), join(this.userData, "Machine")]) mkdirSync(d, { recursive: true });
    for (const [rel, text] of Object.entries(options.files)) {
      mkdirSync(dirname(join(this.workspace, rel)), { recursive: true });
      writeFileSync(join(this.workspace, rel), text);
    }
    writeFileSync(join(this.userData, "User", "settings.json"), JSON.stringify({ ...BASE_USER_SETTINGS, ...options.userSettings }, null, 2));
    writeFileSync(join(this.userData, "Machine", "settings.json"), JSON.stringify(options.machineSettings ?? {}, null, 2));
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) {
      // No model, key or interpreter from the caller's shell leaks into the window.
      if (/^(LOVIA_|OPENAI_|ANTHROPIC_|VSCODE_|ELECTRON_)/.test(k)) continue;
      env[k] = v;
    }
    Object.assign(env, options.env);
    env.XDG_CONFIG_HOME = join(this.root, "xdg-config");
    env.XDG_DATA_HOME = join(this.root, "xdg-data");
    env.XDG_CACHE_HOME = join(this.root, "xdg-cache");
    env.XDG_STATE_HOME = join(this.root, "xdg-state");
    // pip keeps its download cache where it always does, so repeated installs stay quick.
    env.PIP_CACHE_DIR = process.env.PIP_CACHE_DIR ?? join(process.env.HOME ?? tmpdir(), ".cache", "pip");
    this.env = env;
  }

  file(rel: string): string {
    return readFileSync(join(this.workspace, rel), "utf8");
  }

  exists(rel: string): boolean {
    return existsSync(join(this.workspace, rel));
  }

  /** `code-server --install-extension lovia.vsix` into this window's extensions dir. */
  installExtension(): void {
    if (!existsSync(VSIX)) throw new Error(`${VSIX} is missing: run \`npm run package\` first`);
    this.installStartedAt = Date.now();
    const r = spawnSync(codeServer(), ["--user-data-dir", this.userData, "--extensions-dir", this.extensions, "--install-extension", VSIX], {
      env: this.env,
      encoding: "utf8",
      timeout: 120_000,
    });
    writeFileSync(join(this.artifacts, "install-extension.log"), `${r.stdout}\n${r.stderr}`);
    if (r.status !== 0) throw new Error(`--install-extension failed (${r.status}): ${r.stderr}`);
  }

  /** Start code-server in its own process group and open the workbench in Chromium. */
  async start(): Promise<void> {
    this.port = await freePort();
    const out = openSync(join(this.root, "code-server.log"), "a");
    this.server = spawn(
      codeServer(),
      [
        "--auth", "none",
        "--bind-addr", `127.0.0.1:${this.port}`,
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        "--user-data-dir", this.userData,
        "--extensions-dir", this.extensions,
        this.workspace,
      ],
      { env: this.env, cwd: this.workspace, detached: true, stdio: ["ignore", out, out] },
    );
    await until("code-server /healthz", async () => {
      if (this.server?.exitCode !== null) throw new Error(`code-server exited (${this.server?.exitCode}); see ${join(this.root, "code-server.log")}`);
      const res = await fetch(`http://127.0.0.1:${this.port}/healthz`).catch(() => undefined);
      return res?.ok === true;
    }, 60_000, 300);
    this.browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
    const context = await this.browser.newContext({ viewport: { width: 1440, height: 900 }, ignoreHTTPSErrors: this.options.ignoreHTTPSErrors ?? false });
    this.page = await context.newPage();
    await this.openWorkbench();
  }

  private async openWorkbench(): Promise<void> {
    await this.page.goto(`http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(this.workspace)}`);
    await this.page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  }

  /** Reload the browser window (a VS Code "Reload Window"). */
  async reload(): Promise<void> {
    await this.page.reload();
    await this.page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  }

  /** Open lovia's side panel (the activity-bar item) and wait for its webview. */
  async openPanel(): Promise<FrameLocator> {
    const item = this.page.locator('.activitybar [aria-label^="lovia"]').first();
    await item.waitFor({ timeout: 60_000 });
    const view = this.webview();
    // The item toggles its side bar: click it only while lovia's container is not the open one
    // (after a reload the workbench restores it by itself, a little after it appears).
    const isOpen = async () =>
      item.evaluate((el) => el.closest(".action-item")?.classList.contains("checked") ?? false).catch(() => false);
    const deadline = Date.now() + 3_000;
    while (!(await isOpen()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    if (!(await isOpen())) await item.click();
    await view.locator("#app .composer").waitFor({ timeout: 60_000 });
    return view;
  }

  webview(): FrameLocator {
    return this.page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  }

  /** A notification toast's button by its label. */
  notificationButton(label: string): Locator {
    return this.page.locator(".notifications-toasts").getByRole("button", { name: label, exact: true });
  }

  /** Save a numbered screenshot of the whole window. */
  async shot(name: string): Promise<string> {
    this.step += 1;
    const file = join(this.artifacts, `${String(this.step).padStart(2, "0")}-${name}.png`);
    await this.page.screenshot({ path: file }).catch(() => undefined);
    return file;
  }

  /** Quick Open a workspace file into an editor and wait for its text. */
  async openFile(rel: string): Promise<void> {
    await this.page.locator(".monaco-workbench").click({ position: { x: 700, y: 5 } }).catch(() => undefined);
    await this.page.keyboard.press("Control+P");
    const input = this.page.locator(".quick-input-widget input");
    await input.waitFor({ timeout: 20_000 });
    await input.fill(rel);
    await this.page.locator(".quick-input-list .monaco-list-row").first().waitFor({ timeout: 20_000 });
    await sleep(300);
    await this.page.keyboard.press("Enter");
    await this.page.locator(`.tabs-container .tab[aria-label^="${rel.split("/").at(-1)}"]`).first().waitFor({ timeout: 20_000 });
  }

  /** Text of the active (non-diff) editor as rendered. */
  async editorText(): Promise<string> {
    const lines = this.page.locator(".editor-group-container.active .monaco-editor:not(.original-in-monaco-diff-editor):not(.modified-in-monaco-diff-editor) .view-lines").first();
    const text = await lines.innerText();
    return text.replace(/\u00a0/g, " ");
  }

  /** PIDs of this window's lovia server processes (same process group as code-server). */
  serverPids(): number[] {
    if (!this.server?.pid) return [];
    const out = spawnSync("ps", ["-e", "-o", "pid=,pgid=,args="], { encoding: "utf8" }).stdout;
    return out
      .split("\n")
      .map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
      .filter((m): m is RegExpMatchArray => m !== null && Number(m[2]) === this.server!.pid && /-m lovia_server(\s|$)/.test(m[3]!))
      .map((m) => Number(m[1]));
  }

  /** What the lovia output channel has written so far (its log file; "" before it exists). */
  loviaLog(): string {
    const logs = join(this.userData, "logs");
    if (!existsSync(logs)) return "";
    return walk(logs)
      .filter((f) => /lovia\.lovia\/lovia\.log$/.test(f))
      .map((f) => readFileSync(f, "utf8"))
      .join("");
  }

  /** Copy the code-server and extension logs (the lovia output channel) into the artifacts. */
  collectLogs(): void {
    const dest = join(this.artifacts, "logs");
    mkdirSync(dest, { recursive: true });
    const cs = join(this.root, "code-server.log");
    if (existsSync(cs)) cpSync(cs, join(dest, "code-server.log"));
    const logs = join(this.userData, "logs");
    if (existsSync(logs)) cpSync(logs, join(dest, "user-data-logs"), { recursive: true });
    // The lovia output channel, also flat at the top for a quick look.
    for (const f of walk(logs)) {
      if (/lovia/i.test(f) && f.endsWith(".log")) cpSync(f, join(dest, `lovia-${statSync(f).size}-${f.split("/").at(-1)}`));
    }
  }

  /** Close the browser, kill the whole process group, and keep the logs if `failed`. */
  async stop(failed: boolean): Promise<void> {
    if (failed) {
      await this.shot("failure");
      this.collectLogs();
    }
    await this.browser?.close().catch(() => undefined);
    const pid = this.server?.pid;
    if (pid) {
      try {
        process.kill(-pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      await until("code-server to exit", () => this.server?.exitCode !== null || this.server.signalCode !== null, 10_000, 100).catch(() => undefined);
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
    if (!failed && !process.env.LOVIA_E2E_KEEP) rmSync(this.root, { recursive: true, force: true });
  }
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/** Merge figures into artifacts/vscode/timings.json. */
export function recordTimings(values: Record<string, unknown>): void {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, "timings.json");
  let current: Record<string, unknown> = {};
  try {
    current = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    /* first figure */
  }
  writeFileSync(file, JSON.stringify({ ...current, ...values }, null, 2) + "\n");
}

/**
 * A fake provider for one test: Python code run from the repository that prints its base URL
 * on the first line, then one line per thing it records (passed to ``onLine``). ``stop()``
 * ends it; a fake that exits early fails the start.
 */
export function startFakeProvider(code: string, what: string, onLine?: (line: string) => void): Promise<{ baseUrl: string; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(repoPython(), ["-c", code], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    const stop = () => {
      if (child.pid && child.exitCode === null) child.kill("SIGTERM");
    };
    child.on("error", reject);
    child.on("exit", (status) => reject(new Error(`the fake ${what} server exited (${status})`)));
    let baseUrl: string | undefined;
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (baseUrl === undefined) {
        baseUrl = line.trim();
        resolve({ baseUrl, stop });
      } else onLine?.(line);
    });
  });
}
