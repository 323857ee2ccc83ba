import * as path from "node:path";
import * as vscode from "vscode";
import type { ContextRef, Problem } from "../protocol/types";
import type { Mention } from "./messages";

const EXCLUDE = "{**/node_modules/**,**/.git/**,**/.venv/**,**/__pycache__/**,**/dist/**,**/out/**}";
const MAX_FILES = 12;
const MAX_FOLDERS = 4;
const MAX_SYMBOLS = 10;

function toRange(r: vscode.Range): NonNullable<ContextRef["range"]> {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}

function relative(uri: vscode.Uri): string {
  return vscode.workspace.asRelativePath(uri, false);
}

/** Glob-safe letters of what the user typed after `@`. */
function globPart(query: string): string {
  return query.replace(/[^\w.\-/]/g, "");
}

/**
 * Completions for `@query`: the selection and Problems first (when they exist and match), then
 * files and their folders from the workspace, then symbols from the workspace symbol provider.
 */
export async function searchMentions(query: string): Promise<Mention[]> {
  const q = query.toLowerCase();
  const out: Mention[] = [];
  const editor = vscode.window.activeTextEditor;
  if (editor && !editor.selection.isEmpty && "selection".startsWith(q)) {
    const s = editor.selection;
    out.push({ kind: "selection", label: `selection`, detail: `${relative(editor.document.uri)}:${s.start.line + 1}-${s.end.line + 1}`, uri: editor.document.uri.toString(), range: toRange(s) });
  }
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (folder && "problems".startsWith(q)) {
    const all = vscode.languages.getDiagnostics().flatMap(([, d]) => d);
    const errors = all.filter((d) => d.severity === vscode.DiagnosticSeverity.Error).length;
    out.push({ kind: "problems", label: "problems", detail: `${errors} errors, ${all.length - errors} others`, uri: folder.uri.toString() });
  }
  const part = globPart(query);
  const files = await vscode.workspace.findFiles(part ? `**/*${part}*` : "**/*", EXCLUDE, 200);
  files.sort((a, b) => score(a, q) - score(b, q) || relative(a).length - relative(b).length);
  const folders = new Map<string, vscode.Uri>();
  for (const f of files) {
    const dir = vscode.Uri.joinPath(f, "..");
    const rel = relative(dir);
    if (rel && rel !== relative(folder?.uri ?? dir) && rel.toLowerCase().includes(q) && !folders.has(rel)) folders.set(rel, dir);
  }
  for (const f of files.slice(0, MAX_FILES)) out.push({ kind: "file", label: path.basename(f.fsPath), detail: relative(f), uri: f.toString() });
  for (const [rel, dir] of [...folders].slice(0, MAX_FOLDERS)) out.push({ kind: "folder", label: `${rel}/`, detail: "folder", uri: dir.toString() });
  if (query.length >= 2) {
    const symbols = (await vscode.commands.executeCommand<vscode.SymbolInformation[] | undefined>("vscode.executeWorkspaceSymbolProvider", query)) ?? [];
    for (const s of symbols.slice(0, MAX_SYMBOLS)) {
      out.push({ kind: "symbol", label: s.name, detail: `${s.containerName ? `${s.containerName} · ` : ""}${relative(s.location.uri)}`, uri: s.location.uri.toString(), range: toRange(s.location.range) });
    }
  }
  return out;
}

function score(uri: vscode.Uri, q: string): number {
  const base = path.basename(uri.fsPath).toLowerCase();
  if (base.startsWith(q)) return 0;
  if (base.includes(q)) return 1;
  return 2;
}

const SEVERITY: Record<number, Problem["severity"]> = { 0: "error", 1: "warning", 2: "info", 3: "hint" };

/** What a send carries for its mentions: Problems expanded to the diagnostics of now. */
export function resolveMentions(mentions: Mention[]): ContextRef[] {
  return mentions.map((m) => {
    const ref: ContextRef = { uri: m.uri, kind: m.kind, label: m.label };
    if (m.range) ref.range = m.range;
    if (m.kind === "problems") {
      ref.problems = vscode.languages.getDiagnostics().flatMap(([uri, diags]) =>
        diags.map((d) => {
          const p: Problem = { uri: uri.toString(), range: toRange(d.range), severity: SEVERITY[d.severity] ?? "error", message: d.message };
          if (d.source) p.source = d.source;
          return p;
        }),
      );
    }
    if (m.kind === "selection" || m.kind === "problems") delete ref.label;
    return ref;
  });
}
