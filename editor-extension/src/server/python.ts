import * as os from "node:os";
import * as vscode from "vscode";
import { expandPythonPath } from "./settings";

/** The parts of the Python extension's API we use (both the current and the legacy shape). */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment(
      env: { path: string } | string,
    ): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}

export interface PythonChoice {
  command: string;
  source: "setting" | "python-extension" | "default";
}

async function fromPythonExtension(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    if (envs) {
      const active = envs.getActiveEnvironmentPath(resource);
      if (active) {
        const resolved = await envs.resolveEnvironment(active);
        const exe = resolved?.executable?.uri?.fsPath;
        if (exe) return exe;
        if (active.path) return active.path;
      }
    }
    const legacy = api?.settings?.getExecutionDetails(resource).execCommand;
    if (legacy && legacy.length > 0 && legacy[0]) return legacy[0];
  } catch {
    // The Python extension failed to activate: fall through to the default.
  }
  return undefined;
}

/** `lovia.pythonPath`, else the Python extension's active interpreter, else `python3`. */
export async function resolvePython(): Promise<PythonChoice> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const configured = vscode.workspace.getConfiguration("lovia", folder?.uri).get<string>("pythonPath", "");
  if (configured && configured.trim()) {
    return { command: expandPythonPath(configured, folder?.uri.fsPath, os.homedir()), source: "setting" };
  }
  const fromExt = await fromPythonExtension(folder?.uri);
  if (fromExt) return { command: fromExt, source: "python-extension" };
  return { command: process.platform === "win32" ? "python" : "python3", source: "default" };
}
