/**
 * Agent edits that arrive through `workspace/applyEdit` (edit mode `workspaceEdit`) land in
 * the editor's buffers, on its undo stack. A file that had no unsaved changes is saved right
 * after, so the disk holds what the agent wrote (and the agent's next read sees it whichever
 * way it reads); a buffer with the user's unsaved text stays unsaved, the edit on top of it.
 */

/** The parts of an `ApplyWorkspaceEditParams` this looks at. */
export interface EditParams {
  label?: string;
  edit: {
    changes?: Record<string, unknown>;
    documentChanges?: ({ textDocument?: { uri: string }; kind?: string; uri?: string; newUri?: string } | object)[];
  };
}

export interface EditResult {
  applied: boolean;
}

export interface EditDocument {
  readonly isDirty: boolean;
  save(): Thenable<boolean> | Promise<boolean>;
}

/** Open documents by URI string (the editor's `workspace.textDocuments`). */
export type FindDocument = (uri: string) => EditDocument | undefined;

export const AGENT_EDIT_LABEL = /^lovia\b/;

/** The URIs a workspace edit changes text in or creates. */
export function touchedUris(edit: EditParams["edit"]): string[] {
  const uris = new Set<string>(Object.keys(edit.changes ?? {}));
  for (const change of edit.documentChanges ?? []) {
    const c = change as { textDocument?: { uri: string }; kind?: string; uri?: string; newUri?: string };
    if (c.textDocument?.uri) uris.add(c.textDocument.uri);
    else if (c.kind === "create" && c.uri) uris.add(c.uri);
    else if (c.kind === "rename" && c.newUri) uris.add(c.newUri);
  }
  return [...uris];
}

/**
 * Apply an edit through `next`; when it is lovia's and was applied, save the files that had
 * no unsaved changes before it.
 */
export async function applyAgentEdit<R>(params: EditParams, next: () => Promise<R> | R, find: FindDocument): Promise<R> {
  if (!params.label || !AGENT_EDIT_LABEL.test(params.label)) return next();
  const uris = touchedUris(params.edit);
  const cleanBefore = uris.filter((u) => find(u)?.isDirty !== true);
  const result = await next();
  if ((result as EditResult | undefined)?.applied === true) {
    for (const uri of cleanBefore) {
      const doc = find(uri);
      if (doc?.isDirty) await doc.save();
    }
  }
  return result;
}
