/**
 * Picks the Python that runs the server before it is started, and installs lovia into a
 * private environment when none can: the first run needs no terminal.
 *
 * Order: `lovia.pythonPath` (always wins), the private environment from the bundled wheel
 * (upgraded when the extension brings a newer wheel), then an interpreter that already has a
 * matching lovia (the Python extension's, then `python3`), else the offer to install.
 */
import { join } from "node:path";
import * as os from "node:os";
import * as vscode from "vscode";
import { PROTOCOL_VERSION } from "../protocol/types";
import {
  bundledWheel,
  envStatus,
  installPrivateEnv,
  InstallError,
  venvPython,
  type BundledWheel,
  type InstallOptions,
} from "./installer";
import {
  basePythonCandidates,
  canServe,
  findBasePython,
  probeInterpreter,
  type ProbeResult,
} from "./interpreter";
import { fromPythonExtension } from "./python";
import { expandPythonPath } from "./settings";

export type InterpreterSource = "setting" | "private" | "python-extension" | "path";

export interface InterpreterChoice {
  command: string;
  source: InterpreterSource;
}

/** The seams, replaceable in tests; the defaults are the real probe and install. */
export interface BootstrapDeps {
  probe: (command: string) => Promise<ProbeResult>;
  install: (options: InstallOptions) => Promise<string>;
  pythonExtension: () => Promise<string | undefined>;
  candidates: () => string[];
}

const realDeps: BootstrapDeps = {
  probe: (command) => probeInterpreter(command),
  install: installPrivateEnv,
  pythonExtension: () => fromPythonExtension(vscode.workspace.workspaceFolders?.[0]?.uri),
  candidates: () => basePythonCandidates(),
};

export const INSTALL_ACTION = "Install lovia";
export const OPEN_SETTINGS = "Open Settings";
export const OPEN_LOG = "Open Log";
export const RETRY = "Retry";

export class ServerBootstrap {
  private warnedMismatch = false;
  private readonly deps: BootstrapDeps;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    deps: Partial<BootstrapDeps> = {},
  ) {
    this.deps = { ...realDeps, ...deps };
  }

  get venvDir(): string {
    return join(this.context.globalStorageUri.fsPath, "python-env");
  }

  wheel(): BundledWheel | undefined {
    return bundledWheel(vscode.Uri.joinPath(this.context.extensionUri, "python").fsPath);
  }

  /** The interpreter to start the server with, or undefined when the user was told why not. */
  async resolve(): Promise<InterpreterChoice | undefined> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const configured = vscode.workspace.getConfiguration("lovia", folder?.uri).get<string>("pythonPath", "");
    if (configured && configured.trim()) {
      return this.fromSetting(expandPythonPath(configured, folder?.uri.fsPath, os.homedir()));
    }
    const wheel = this.wheel();
    if (wheel) {
      const status = envStatus(this.venvDir, wheel);
      if (status === "current") return { command: venvPython(this.venvDir), source: "private" };
      if (status === "outdated") {
        this.log.info(`lovia: upgrading the private Python environment to ${wheel.file}`);
        const upgraded = await this.install(wheel, "Updating lovia");
        if (upgraded) return upgraded;
      }
    }
    const found = await this.existingInstall();
    if (found) return found;
    if (!wheel) {
      void this.offerSettings(
        "lovia: no Python with the lovia server was found. Set lovia.pythonPath to a Python 3.11+ that has lovia installed.",
      );
      return undefined;
    }
    const choice = await vscode.window.showInformationMessage(
      "lovia runs its agents in Python. Install lovia into a private environment now? (needs Python 3.11+ and the package index for its dependencies)",
      INSTALL_ACTION,
      OPEN_SETTINGS,
    );
    if (choice === OPEN_SETTINGS) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "lovia.pythonPath");
      return undefined;
    }
    if (choice !== INSTALL_ACTION) return undefined;
    return this.install(wheel, "Installing lovia");
  }

  /** (Re)install the bundled wheel on request (the `lovia.installServer` command). */
  async installOnRequest(): Promise<InterpreterChoice | undefined> {
    const wheel = this.wheel();
    if (!wheel) {
      void vscode.window.showErrorMessage("lovia: this build of the extension carries no lovia wheel to install.");
      return undefined;
    }
    return this.install(wheel, "Installing lovia");
  }

  private async fromSetting(command: string): Promise<InterpreterChoice | undefined> {
    const probe = await this.deps.probe(command);
    if (canServe(probe, PROTOCOL_VERSION)) return { command, source: "setting" };
    if (probe.runs && probe.supported && probe.protocolVersion !== undefined) {
      // The user's choice wins; say once that it may not understand this extension.
      if (!this.warnedMismatch) {
        this.warnedMismatch = true;
        void vscode.window
          .showWarningMessage(
            `lovia: lovia.pythonPath (${command}) has lovia ${probe.version ?? ""} speaking protocol ${probe.protocolVersion}; this extension speaks ${PROTOCOL_VERSION}. Update lovia there or clear the setting.`,
            OPEN_SETTINGS,
          )
          .then((c) => (c === OPEN_SETTINGS ? this.openSettings() : undefined));
      }
      return { command, source: "setting" };
    }
    const why = probe.problem ?? "it cannot import lovia_server";
    this.log.error(`lovia.pythonPath ${command}: ${why}`);
    void this.offerSettings(`lovia: lovia.pythonPath (${command}) cannot run the lovia server: ${why}.`);
    return undefined;
  }

  private async existingInstall(): Promise<InterpreterChoice | undefined> {
    const fromExtension = await this.deps.pythonExtension();
    const tried: [string, InterpreterSource][] = [];
    if (fromExtension) tried.push([fromExtension, "python-extension"]);
    tried.push([process.platform === "win32" ? "python" : "python3", "path"]);
    for (const [command, source] of tried) {
      const probe = await this.deps.probe(command);
      if (canServe(probe, PROTOCOL_VERSION)) return { command, source };
      this.log.info(`lovia: ${command} cannot serve (${probe.problem ?? `protocol ${String(probe.protocolVersion)}`})`);
    }
    return undefined;
  }

  private async install(wheel: BundledWheel, title: string): Promise<InterpreterChoice | undefined> {
    const fromExtension = await this.deps.pythonExtension();
    const candidates = [...(fromExtension ? [fromExtension] : []), ...this.deps.candidates()];
    const base = await findBasePython(candidates, this.deps.probe);
    if (!base) {
      void this.offerSettings(
        "lovia: no Python 3.11 or newer was found to install lovia with. Install one, or set lovia.pythonPath.",
      );
      return undefined;
    }
    this.log.info(`lovia: ${title.toLowerCase()} from ${wheel.file} with ${base.command} (Python ${base.python ?? "?"}) into ${this.venvDir}`);
    try {
      const python = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `lovia: ${title}`, cancellable: true },
        (progress, token) => {
          const abort = new AbortController();
          token.onCancellationRequested(() => abort.abort());
          return this.deps.install({
            basePython: base.command,
            venvDir: this.venvDir,
            wheel,
            log: (line) => this.log.info(`[install] ${line}`),
            report: (message) => progress.report({ message }),
            signal: abort.signal,
          });
        },
      );
      const probe = await this.deps.probe(python);
      if (!canServe(probe, PROTOCOL_VERSION)) {
        throw new InstallError("failed", `the new environment cannot run the server: ${probe.problem ?? "protocol mismatch"}`);
      }
      void vscode.window.showInformationMessage(`lovia: installed lovia ${probe.version ?? ""} (Python ${probe.python ?? "?"}).`);
      return { command: python, source: "private" };
    } catch (err) {
      return this.installFailed(err, wheel, title);
    }
  }

  private async installFailed(err: unknown, wheel: BundledWheel, title: string): Promise<InterpreterChoice | undefined> {
    const kind = err instanceof InstallError ? err.kind : "failed";
    const message = err instanceof Error ? err.message : String(err);
    this.log.error(`lovia: install ${kind}: ${message}`);
    if (kind === "cancelled") {
      const again = await vscode.window.showInformationMessage("lovia: the install was cancelled.", INSTALL_ACTION);
      return again === INSTALL_ACTION ? this.install(wheel, title) : undefined;
    }
    if (kind === "offline") {
      const c = await vscode.window.showErrorMessage(
        `lovia: ${message} Check the network or proxy settings, then run “lovia: Install Server”.`,
        OPEN_LOG,
      );
      if (c === OPEN_LOG) this.log.show();
      return undefined;
    }
    const c = await vscode.window.showErrorMessage(`lovia: ${message}`, RETRY, OPEN_LOG);
    if (c === OPEN_LOG) this.log.show();
    if (c === RETRY) return this.install(wheel, title);
    return undefined;
  }

  private async offerSettings(message: string): Promise<void> {
    const c = await vscode.window.showErrorMessage(message, OPEN_SETTINGS, OPEN_LOG);
    if (c === OPEN_SETTINGS) await this.openSettings();
    else if (c === OPEN_LOG) this.log.show();
  }

  private async openSettings(): Promise<void> {
    await vscode.commands.executeCommand("workbench.action.openSettings", "lovia.pythonPath");
  }
}
