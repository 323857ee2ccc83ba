import * as vscode from "vscode";
import { __mock } from "../vscode-mock/vscode";

/** An in-memory Memento (workspaceState / globalState). */
export function memento(): vscode.Memento & { values: Map<string, unknown> } {
  const values = new Map<string, unknown>();
  return {
    values,
    keys: () => [...values.keys()],
    get: <T>(key: string, defaultValue?: T) => (values.has(key) ? (values.get(key) as T) : defaultValue),
    update: (key: string, value: unknown) => {
      if (value === undefined) values.delete(key);
      else values.set(key, value);
      return Promise.resolve();
    },
  } as vscode.Memento & { values: Map<string, unknown> };
}

/** A minimal ExtensionContext backed by the vscode mock (secrets really stored). */
export function makeContext(): vscode.ExtensionContext {
  const secrets = __mock.state.secrets;
  const ctx = {
    workspaceState: memento(),
    globalState: memento(),
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
