/**
 * The private Python environment the extension installs lovia into: a venv in the extension's
 * global storage, filled from the wheel bundled in the .vsix (its dependencies come from the
 * package index). vscode-free: the real install is tested with real Python and pip.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const MARKER = "lovia-bundle.json";

export type InstallFailure = "offline" | "failed" | "cancelled" | "no-venv";

/** An install that did not finish; `kind` decides what the user is offered. */
export class InstallError extends Error {
  constructor(
    readonly kind: InstallFailure,
    message: string,
  ) {
    super(message);
    this.name = "InstallError";
  }
}

export interface BundledWheel {
  path: string;
  file: string;
  sha256: string;
}

/** The newest `lovia_agents-*.whl` in `dir` (the .vsix's `python/` folder), if any. */
export function bundledWheel(dir: string): BundledWheel | undefined {
  if (!existsSync(dir)) return undefined;
  const wheels = readdirSync(dir)
    .filter((f) => /^lovia_agents-.+\.whl$/.test(f))
    .sort();
  const file = wheels.at(-1);
  if (!file) return undefined;
  const path = join(dir, file);
  const sha256 = createHash("sha256").update(readFileSync(path)).digest("hex");
  return { path, file, sha256 };
}

export function venvPython(venvDir: string, platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? join(venvDir, "Scripts", "python.exe") : join(venvDir, "bin", "python");
}

export type EnvStatus = "missing" | "outdated" | "current";

/** Whether the private environment holds exactly the bundled wheel. */
export function envStatus(venvDir: string, wheel: BundledWheel): EnvStatus {
  if (!existsSync(venvPython(venvDir))) return "missing";
  try {
    const marker = JSON.parse(readFileSync(join(venvDir, MARKER), "utf8")) as { sha256?: string };
    return marker.sha256 === wheel.sha256 ? "current" : "outdated";
  } catch {
    return "outdated";
  }
}

const OFFLINE = [
  /Failed to establish a new connection/i,
  /Temporary failure in name resolution/i,
  /Name or service not known/i,
  /Network is unreachable/i,
  /Connection refused/i,
  /ConnectTimeoutError|ReadTimeoutError|timed out/i,
  /ProxyError/i,
  /Could not fetch URL/i,
  /No matching distribution found/i,
];

/** pip's output says the package index could not be reached (or had nothing to give). */
export function looksOffline(output: string): boolean {
  return OFFLINE.some((re) => re.test(output));
}

export interface InstallOptions {
  basePython: string;
  venvDir: string;
  wheel: BundledWheel;
  /** Each line of output from venv and pip. */
  log: (line: string) => void;
  /** Short status for a progress notification. */
  report?: (message: string) => void;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
}

/** Creates the venv when missing and installs the bundled wheel with its dependencies. */
export async function installPrivateEnv(options: InstallOptions): Promise<string> {
  const { venvDir, wheel, log, report, signal } = options;
  const python = venvPython(venvDir);
  const env = { ...(options.env ?? process.env), PIP_DISABLE_PIP_VERSION_CHECK: "1", PIP_NO_INPUT: "1" };
  if (!existsSync(python)) {
    report?.("Creating a Python environment…");
    const out = await run(options.basePython, ["-m", "venv", venvDir], { env, log, signal });
    if (out.code !== 0) {
      const hint = /ensurepip|venv/.test(out.text)
        ? " (on Debian and Ubuntu: install the python3-venv package)"
        : "";
      throw new InstallError("no-venv", `Could not create a virtual environment with ${options.basePython}${hint}.`);
    }
  }
  report?.("Installing lovia and its dependencies…");
  const install = await run(python, ["-m", "pip", "install", "--upgrade", wheel.path], { env, log, signal });
  if (install.code !== 0) throw failure(install.text);
  // Same version string, different build (a development wheel): take the bundled files as they are.
  const exact = await run(python, ["-m", "pip", "install", "--force-reinstall", "--no-deps", wheel.path], {
    env,
    log,
    signal,
  });
  if (exact.code !== 0) throw failure(exact.text);
  writeFileSync(join(venvDir, MARKER), JSON.stringify({ wheel: wheel.file, sha256: wheel.sha256 }, null, 2));
  return python;
}

function failure(output: string): InstallError {
  if (looksOffline(output)) {
    return new InstallError(
      "offline",
      "The Python package index could not be reached, so lovia's dependencies could not be installed.",
    );
  }
  return new InstallError("failed", "pip could not install lovia (see the lovia log for pip's output).");
}

interface RunOutput {
  code: number;
  text: string;
}

function run(
  command: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; log: (line: string) => void; signal?: AbortSignal },
): Promise<RunOutput> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) {
      reject(new InstallError("cancelled", "The install was cancelled."));
      return;
    }
    const child = spawn(command, args, { env: opts.env, stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
    let text = "";
    let pending = "";
    const onData = (chunk: Buffer): void => {
      const s = chunk.toString();
      text += s;
      pending += s;
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) opts.log(line);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const abort = (): void => {
      child.kill("SIGTERM");
    };
    opts.signal?.addEventListener("abort", abort, { once: true });
    child.once("error", (err) => {
      opts.signal?.removeEventListener("abort", abort);
      resolve({ code: 127, text: `${command}: ${err.message}` });
    });
    child.once("close", (code) => {
      opts.signal?.removeEventListener("abort", abort);
      if (pending.trim()) opts.log(pending);
      if (opts.signal?.aborted) reject(new InstallError("cancelled", "The install was cancelled."));
      else resolve({ code: code ?? 1, text });
    });
  });
}
