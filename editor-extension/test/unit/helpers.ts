import * as vscode from "vscode";
import { __mock } from "../vscode-mock/vscode";

/** A minimal ExtensionContext backed by the vscode mock (secrets really stored). */
export function makeContext(): vscode.ExtensionContext {
  const secrets = __mock.state.secrets;
  const ctx = {
    subscriptions: [] as { dispose(): unknown }[],
    extensionUri: vscode.Uri.file("/ext/lovia"),
    storageUri: vscode.Uri.file("/storage/workspace-1"),
    globalStorageUri: vscode.Uri.file("/storage/global"),
    secrets: {
      get: (key: string) => Promise.resolve(secrets.get(key)),
      store: (key: string, value: string) => {
        secrets.set(key, value);
        return Promise.resolve();
      },
      delete: (key: string) => {
        secrets.delete(key);
        return Promise.resolve();
      },
      onDidChange: new vscode.EventEmitter<unknown>().event,
    },
  };
  return ctx as unknown as vscode.ExtensionContext;
}

export function disposeAll(ctx: vscode.ExtensionContext): void {
  for (const d of ctx.subscriptions) d.dispose();
}
