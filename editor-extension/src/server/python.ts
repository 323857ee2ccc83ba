import * as vscode from "vscode";

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

/** The Python extension's active interpreter for `resource`, if it has one. */
export async function fromPythonExtension(resource: vscode.Uri | undefined): Promise<string | undefined> {
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
