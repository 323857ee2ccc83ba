/**
 * The first-run install for real: the wheel `npm run package` bundles is built from this
 * repository, a real Python creates the private venv, and real pip installs the wheel with
 * its dependencies from the package index. Then the new interpreter is probed exactly as the
 * extension does before it starts the server.
 *
 * A second case points pip at a closed local port (and no config files), so the dependencies
 * cannot be fetched: the failure must be classified as "offline".
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { bundledWheel, envStatus, installPrivateEnv, InstallError, MARKER, type BundledWheel } from "../../src/server/installer";
import { basePythonCandidates, canServe, findBasePython, probeInterpreter } from "../../src/server/interpreter";
import { PROTOCOL_VERSION } from "../../src/protocol/types";

const extensionDir = fileURLToPath(new URL("../..", import.meta.url));
let wheel: BundledWheel;
let basePython: string;

beforeAll(() => {
  execFileSync(process.execPath, [join(extensionDir, "scripts", "bundle-wheel.mjs")], {
    env: { ...process.env, LOVIA_PYTHON: process.env.LOVIA_PYTHON ?? "python3" },
    stdio: "inherit",
  });
  wheel = bundledWheel(join(extensionDir, "python"))!;
  expect(wheel).toBeDefined();
}, 180_000);

describe("installing lovia into a private environment", () => {
  it("finds a Python 3.11+, installs the bundled wheel and its dependencies, and the result can serve", async () => {
    const base = await findBasePython(basePythonCandidates());
    expect(base, "a Python 3.11+ on PATH").toBeDefined();
    basePython = base!.command;
    const venvDir = join(mkdtempSync(join(tmpdir(), "lovia-install-")), "python-env");
    expect(envStatus(venvDir, wheel)).toBe("missing");
    const lines: string[] = [];
    const reports: string[] = [];
    const python = await installPrivateEnv({
      basePython,
      venvDir,
      wheel,
      log: (l) => lines.push(l),
      report: (m) => reports.push(m),
    });
    expect(reports).toEqual(["Creating a Python environment…", "Installing lovia and its dependencies…"]);
    expect(lines.some((l) => /Successfully installed .*lovia-agents/.test(l))).toBe(true);
    const probe = await probeInterpreter(python);
    expect(canServe(probe, PROTOCOL_VERSION), JSON.stringify(probe)).toBe(true);
    expect(envStatus(venvDir, wheel)).toBe("current");
    expect(JSON.parse(readFileSync(join(venvDir, MARKER), "utf8"))).toEqual({ wheel: wheel.file, sha256: wheel.sha256 });
    const version = execFileSync(python, ["-m", "lovia_server", "--probe"], { encoding: "utf8" });
    expect(JSON.parse(version)).toMatchObject({ protocolVersion: PROTOCOL_VERSION });
  }, 600_000);

  it("an unreachable package index fails as offline, leaving no marker", async () => {
    const base = await findBasePython(basePythonCandidates());
    const venvDir = join(mkdtempSync(join(tmpdir(), "lovia-offline-")), "python-env");
    const env = {
      ...process.env,
      PIP_CONFIG_FILE: "/dev/null",
      PIP_INDEX_URL: "http://127.0.0.1:9/simple",
      PIP_EXTRA_INDEX_URL: "",
      PIP_FIND_LINKS: "",
      PIP_RETRIES: "0",
      PIP_TIMEOUT: "3",
    };
    const err = await installPrivateEnv({ basePython: base!.command, venvDir, wheel, log: () => undefined, env }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InstallError);
    expect((err as InstallError).kind).toBe("offline");
    expect(existsSync(join(venvDir, MARKER))).toBe(false);
  }, 300_000);

  it("a cancelled install stops pip and says cancelled", async () => {
    const base = await findBasePython(basePythonCandidates());
    const venvDir = join(mkdtempSync(join(tmpdir(), "lovia-cancel-")), "python-env");
    const abort = new AbortController();
    let installing = false;
    const pipLines: string[] = [];
    const err = await installPrivateEnv({
      basePython: base!.command,
      venvDir,
      wheel,
      // pip is running once it prints its first line: cancel then
      log: (line) => {
        if (!installing) return;
        pipLines.push(line);
        abort.abort();
      },
      report: (m) => {
        installing = m.startsWith("Installing");
      },
      signal: abort.signal,
    }).catch((e: unknown) => e);
    expect(pipLines.length).toBeGreaterThan(0);
    expect(err).toBeInstanceOf(InstallError);
    expect((err as InstallError).kind).toBe("cancelled");
    expect(existsSync(join(venvDir, MARKER))).toBe(false);
  }, 300_000);
});
