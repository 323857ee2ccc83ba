import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { __mock, Uri } from "../vscode-mock/vscode";
import { ServerBootstrap, INSTALL_ACTION, OPEN_SETTINGS, RETRY, type BootstrapDeps } from "../../src/server/bootstrap";
import { InstallError, MARKER, bundledWheel, venvPython, type InstallOptions } from "../../src/server/installer";
import type { ProbeResult } from "../../src/server/interpreter";
import * as vscode from "vscode";

const READY = { runs: true, supported: true, python: "3.12.1", protocolVersion: 1, version: "0.1.0" };

interface Fixture {
  boot: ServerBootstrap;
  probes: string[];
  installs: InstallOptions[];
  ext: string;
  storage: string;
}

/** A bootstrap over real temp folders (extension with a wheel, global storage) and fake interpreters. */
function fixture(
  interpreters: Record<string, Partial<ProbeResult>>,
  opts: { wheel?: boolean; install?: (o: InstallOptions) => Promise<string>; pythonExtension?: string } = {},
): Fixture {
  const root = mkdtempSync(join(tmpdir(), "lovia-boot-"));
  const ext = join(root, "ext");
  const storage = join(root, "global");
  mkdirSync(join(ext, "python"), { recursive: true });
  if (opts.wheel !== false) writeFileSync(join(ext, "python", "lovia_agents-0.1.0-py3-none-any.whl"), "wheel bytes v1");
  const probes: string[] = [];
  const installs: InstallOptions[] = [];
  const deps: BootstrapDeps = {
    probe: (command) => {
      probes.push(command);
      const known = interpreters[command];
      return Promise.resolve(
        known
          ? { command, runs: true, supported: true, ...known }
          : { command, runs: false, supported: false, problem: `${command}: not found` },
      );
    },
    install:
      opts.install ??
      ((o) => {
        installs.push(o);
        const python = venvPython(o.venvDir);
        mkdirSync(join(o.venvDir, "bin"), { recursive: true });
        writeFileSync(python, "");
        writeFileSync(join(o.venvDir, MARKER), JSON.stringify({ sha256: o.wheel.sha256 }));
        interpreters[python] = READY;
        return Promise.resolve(python);
      }),
    pythonExtension: () => Promise.resolve(opts.pythonExtension),
    candidates: () => ["python3.13", "python3.11", "python3"],
  };
  const context = {
    extensionUri: Uri.file(ext),
    globalStorageUri: Uri.file(storage),
  } as unknown as vscode.ExtensionContext;
  const log = vscode.window.createOutputChannel("lovia", { log: true }) as unknown as vscode.LogOutputChannel;
  return { boot: new ServerBootstrap(context, log, deps), probes, installs, ext, storage };
}

const errors = () => __mock.state.messages.filter((m) => m.level === "error");

beforeEach(() => __mock.reset());

describe("ServerBootstrap.resolve", () => {
  it("uses lovia.pythonPath when it can serve, without offering an install", async () => {
    __mock.state.settings["lovia.pythonPath"] = "${workspaceFolder}/.venv/bin/python";
    const f = fixture({ "/work/project/.venv/bin/python": READY });
    expect(await f.boot.resolve()).toEqual({ command: "/work/project/.venv/bin/python", source: "setting" });
    expect(f.installs).toHaveLength(0);
    expect(__mock.state.messages).toHaveLength(0);
  });

  it("keeps a pythonPath whose lovia speaks another protocol, and warns once", async () => {
    __mock.state.settings["lovia.pythonPath"] = "/old/python";
    const f = fixture({ "/old/python": { ...READY, protocolVersion: 0, version: "0.0.9" } });
    expect(await f.boot.resolve()).toEqual({ command: "/old/python", source: "setting" });
    expect(await f.boot.resolve()).toEqual({ command: "/old/python", source: "setting" });
    const warnings = __mock.state.messages.filter((m) => m.level === "warning");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.text).toContain("protocol 0");
    expect(warnings[0]!.items).toEqual([OPEN_SETTINGS]);
  });

  it("reports a pythonPath that cannot import the server once, with a way to fix it, and starts nothing", async () => {
    __mock.state.settings["lovia.pythonPath"] = "/usr/bin/python3";
    const f = fixture({ "/usr/bin/python3": { python: "3.11.2", problem: "ModuleNotFoundError: No module named 'lovia_server'" } });
    __mock.state.messageAnswers.push(OPEN_SETTINGS);
    expect(await f.boot.resolve()).toBeUndefined();
    expect(errors()).toHaveLength(1);
    expect(errors()[0]!.text).toContain("No module named 'lovia_server'");
    await new Promise((r) => setTimeout(r, 0));
    expect(__mock.state.executed.some((e) => e.command === "workbench.action.openSettings")).toBe(true);
    expect(f.installs).toHaveLength(0);
  });

  it("uses the private environment when it holds the bundled wheel, probing nothing", async () => {
    const f = fixture({});
    const wheel = bundledWheel(join(f.ext, "python"))!;
    const venv = join(f.storage, "python-env");
    mkdirSync(join(venv, "bin"), { recursive: true });
    writeFileSync(venvPython(venv), "");
    writeFileSync(join(venv, MARKER), JSON.stringify({ sha256: wheel.sha256 }));
    expect(await f.boot.resolve()).toEqual({ command: venvPython(venv), source: "private" });
    expect(f.probes).toEqual([]);
  });

  it("upgrades the private environment when the extension brings a different wheel", async () => {
    const f = fixture({ "python3.11": READY });
    const venv = join(f.storage, "python-env");
    mkdirSync(join(venv, "bin"), { recursive: true });
    writeFileSync(venvPython(venv), "");
    writeFileSync(join(venv, MARKER), JSON.stringify({ sha256: "an older wheel" }));
    expect(await f.boot.resolve()).toEqual({ command: venvPython(venv), source: "private" });
    expect(f.installs).toHaveLength(1);
    expect(f.installs[0]!.basePython).toBe("python3.11");
    expect(__mock.state.messages.filter((m) => m.text.includes("Install lovia into"))).toHaveLength(0);
  });

  it("uses an interpreter that already has a matching lovia", async () => {
    const f = fixture({ python3: READY });
    expect(await f.boot.resolve()).toEqual({ command: "python3", source: "path" });
    expect(f.installs).toHaveLength(0);
  });

  it("offers Install lovia first and installs with the newest Python >= 3.11", async () => {
    const f = fixture({ "python3.13": { python: "3.13.0", problem: "No module named 'lovia_server'" }, python3: { python: "3.11.7" } });
    __mock.state.messageAnswers.push(INSTALL_ACTION);
    const choice = await f.boot.resolve();
    expect(choice).toEqual({ command: venvPython(join(f.storage, "python-env")), source: "private" });
    const offer = __mock.state.messages[0]!;
    expect(offer.items[0]).toBe(INSTALL_ACTION);
    expect(f.installs).toHaveLength(1);
    expect(f.installs[0]!.basePython).toBe("python3.13");
    expect(f.installs[0]!.wheel.file).toBe("lovia_agents-0.1.0-py3-none-any.whl");
  });

  it("says so when no Python 3.11+ exists, pointing at lovia.pythonPath", async () => {
    const f = fixture({ python3: { python: "3.9.2", supported: false, problem: "Python 3.9.2 is older than 3.11" } });
    __mock.state.messageAnswers.push(INSTALL_ACTION);
    expect(await f.boot.resolve()).toBeUndefined();
    expect(errors()).toHaveLength(1);
    expect(errors()[0]!.text).toContain("no Python 3.11 or newer");
    expect(errors()[0]!.items).toContain(OPEN_SETTINGS);
    expect(f.installs).toHaveLength(0);
  });

  it("an unreachable package index is reported without a retry loop", async () => {
    let calls = 0;
    const f = fixture(
      { python3: { python: "3.11.7" } },
      {
        install: () => {
          calls += 1;
          return Promise.reject(new InstallError("offline", "The Python package index could not be reached."));
        },
      },
    );
    __mock.state.messageAnswers.push(INSTALL_ACTION);
    expect(await f.boot.resolve()).toBeUndefined();
    expect(calls).toBe(1);
    expect(errors()).toHaveLength(1);
    expect(errors()[0]!.text).toContain("could not be reached");
    expect(errors()[0]!.items).not.toContain(RETRY);
  });

  it("a failed install offers Retry, which installs again", async () => {
    let calls = 0;
    const f = fixture(
      { python3: { python: "3.11.7" } },
      {
        install: (o) => {
          calls += 1;
          if (calls === 1) return Promise.reject(new InstallError("failed", "pip could not install lovia."));
          const python = venvPython(o.venvDir);
          return Promise.resolve(python);
        },
      },
    );
    // the retried install's interpreter must probe as ready
    __mock.state.messageAnswers.push(INSTALL_ACTION, RETRY);
    const boot = f.boot as unknown as { deps: BootstrapDeps };
    const probe = boot.deps.probe;
    boot.deps.probe = (command) =>
      command.endsWith(join("bin", "python")) ? Promise.resolve({ command, ...READY }) : probe(command);
    expect(await f.boot.resolve()).toEqual({ command: venvPython(join(f.storage, "python-env")), source: "private" });
    expect(calls).toBe(2);
    expect(errors()[0]!.items).toEqual([RETRY, "Open Log"]);
  });

  it("does nothing when the user declines", async () => {
    const f = fixture({ python3: { python: "3.11.7" } });
    __mock.state.messageAnswers.push(undefined);
    expect(await f.boot.resolve()).toBeUndefined();
    expect(f.installs).toHaveLength(0);
  });

  it("without a bundled wheel, asks for lovia.pythonPath", async () => {
    const f = fixture({}, { wheel: false });
    expect(await f.boot.resolve()).toBeUndefined();
    expect(errors()[0]!.text).toContain("Set lovia.pythonPath");
  });
});
