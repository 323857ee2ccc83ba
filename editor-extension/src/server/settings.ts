/**
 * Pure mapping from VS Code settings and state to what the server receives
 * (initialization options, the `lovia` configuration section, the process environment).
 * Kept free of `vscode` so it is easy to test.
 */
import { PROTOCOL_VERSION, type LoviaInitializationOptions, type LoviaSettings, type SubagentSettings } from "../protocol/types";

/** Keys of the `lovia` section that only the extension reads. */
export const EXTENSION_ONLY_KEYS = ["pythonPath", "openDiffOnApproval", "trace"] as const;

export interface ApiKeyProvider {
  id: "openai" | "anthropic";
  label: string;
  env: "OPENAI_API_KEY" | "ANTHROPIC_API_KEY";
  secretKey: string;
}

export const API_KEY_PROVIDERS: readonly ApiKeyProvider[] = [
  { id: "openai", label: "OpenAI (or OpenAI-compatible)", env: "OPENAI_API_KEY", secretKey: "lovia.apiKey.openai" },
  { id: "anthropic", label: "Anthropic", env: "ANTHROPIC_API_KEY", secretKey: "lovia.apiKey.anthropic" },
];

/**
 * The edit mode is a setting the server reads for every run, so it is not sent here. `trusted`
 * is Workspace Trust at start: an untrusted client's settings are restricted by the server too
 * (a restart sends the new value once trust is granted).
 */
export function buildInitializationOptions(opts: { stateDir: string | undefined; trusted: boolean }): {
  lovia: LoviaInitializationOptions;
} {
  const lovia: LoviaInitializationOptions = {
    protocolVersion: PROTOCOL_VERSION,
    client: "vscode",
    approvals: "events",
    progress: true,
    trusted: opts.trusted,
    // Answered by EditorIntel (editorIntel.ts) from VS Code's language servers.
    editorIntel: { diagnostics: true, locations: true, symbols: true },
  };
  if (opts.stateDir) lovia.stateDir = opts.stateDir;
  return { lovia };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Turn the raw `lovia` configuration section into what the server is told:
 * extension-only keys dropped, empty values dropped (so server defaults apply), and
 * Workspace Trust applied: untrusted → the `readonly` preset, no agent, no MCP servers, no
 * command rules, path rules only as their `deny` parts. In an untrusted workspace this is
 * applied to the user's own values only; see {@link restrictedSettings}.
 */
export function serverSettings(raw: unknown, trusted: boolean): LoviaSettings {
  const src: Record<string, unknown> = isPlainObject(raw) ? (JSON.parse(JSON.stringify(raw)) as Record<string, unknown>) : {};
  for (const key of EXTENSION_ONLY_KEYS) delete src[key];
  const out: LoviaSettings = {};
  if (typeof src.model === "string" && src.model.trim()) out.model = src.model.trim();
  if (typeof src.agent === "string" && src.agent.trim() && trusted) out.agent = src.agent.trim();
  if (typeof src.maxTurns === "number" && src.maxTurns > 0) out.maxTurns = Math.floor(src.maxTurns);
  if (typeof src.approvalTimeoutSeconds === "number" && src.approvalTimeoutSeconds > 0) {
    out.approvalTimeoutSeconds = src.approvalTimeoutSeconds;
  }
  if (trusted && isPlainObject(src.mcpServers) && Object.keys(src.mcpServers).length > 0) {
    out.mcpServers = src.mcpServers as NonNullable<LoviaSettings["mcpServers"]>;
  }
  if (src.editMode === "auto" || src.editMode === "server" || src.editMode === "workspaceEdit") {
    out.editMode = src.editMode;
  }
  if (isPlainObject(src.restorePoints)) {
    const rp = src.restorePoints;
    const restorePoints: NonNullable<LoviaSettings["restorePoints"]> = {};
    if (typeof rp.enabled === "boolean") restorePoints.enabled = rp.enabled;
    if (typeof rp.maxStoreMB === "number" && rp.maxStoreMB > 0) restorePoints.maxStoreMB = rp.maxStoreMB;
    if (typeof rp.maxFileMB === "number" && rp.maxFileMB > 0) restorePoints.maxFileMB = rp.maxFileMB;
    if (Object.keys(restorePoints).length > 0) out.restorePoints = restorePoints;
  }
  const sandbox = sandboxSettings(src.sandbox);
  if (sandbox) out.sandbox = sandbox;
  if (typeof src.mcpIdleTimeoutSeconds === "number" && src.mcpIdleTimeoutSeconds > 0) out.mcpIdleTimeoutSeconds = src.mcpIdleTimeoutSeconds;
  const subagents = subagentSettings(src.subagents);
  if (subagents) out.subagents = subagents;
  if (isPlainObject(src.worktrees)) {
    const max = src.worktrees.maxConcurrent;
    if (typeof max === "number" && max >= 1) out.worktrees = { maxConcurrent: Math.floor(max) };
  }
  if (isPlainObject(src.modelPrices) && Object.keys(src.modelPrices).length > 0) {
    out.modelPrices = src.modelPrices as NonNullable<LoviaSettings["modelPrices"]>;
  }
  if (typeof src.diagnosticsAfterEdits === "boolean") out.diagnosticsAfterEdits = src.diagnosticsAfterEdits;
  if (typeof src.promptCaching === "boolean") out.promptCaching = src.promptCaching;
  if (src.promptCacheTtl === "5m" || src.promptCacheTtl === "1h") out.promptCacheTtl = src.promptCacheTtl;
  if (isPlainObject(src.providerOptions)) {
    // Objects per provider only; the server says what it refuses (a settings problem).
    const options = Object.entries(src.providerOptions).filter(([, v]) => isPlainObject(v));
    if (options.length > 0) out.providerOptions = Object.fromEntries(options) as NonNullable<LoviaSettings["providerOptions"]>;
  }

  const perms = isPlainObject(src.permissions) ? src.permissions : {};
  const permissions: NonNullable<LoviaSettings["permissions"]> = {};
  const preset = perms.preset;
  if (preset === "readonly" || preset === "coding" || preset === "trusted") permissions.preset = preset;
  if (perms.write === "ask" || perms.write === "allow") permissions.write = perms.write;
  if (Array.isArray(perms.pathRules)) {
    permissions.pathRules = perms.pathRules.filter(
      (r): r is { pattern: string } => isPlainObject(r) && typeof r.pattern === "string",
    );
  }
  if (Array.isArray(perms.commandRules)) {
    permissions.commandRules = perms.commandRules.filter(
      (r): r is { pattern: string; decision: "allow" | "ask" | "deny" } =>
        isPlainObject(r) && typeof r.pattern === "string" && typeof r.decision === "string",
    );
  }
  if (Array.isArray(perms.deniedPaths)) {
    permissions.deniedPaths = perms.deniedPaths.filter((p): p is string => typeof p === "string");
  }
  if (typeof perms.readOnlyCommands === "boolean") permissions.readOnlyCommands = perms.readOnlyCommands;
  if (Array.isArray(perms.protectedPaths)) {
    // Only ever more: the server's built-in list of protected paths cannot be shortened.
    const extra = perms.protectedPaths.filter((p): p is string => typeof p === "string" && p.trim() !== "");
    if (extra.length > 0) permissions.protectedPaths = extra;
  }
  if (!trusted) {
    // Untrusted: read-only, and rules only where they deny (never an allow or an ask).
    permissions.preset = "readonly";
    delete permissions.write;
    if (permissions.pathRules) permissions.pathRules = denyParts(permissions.pathRules);
    if (permissions.pathRules?.length === 0) delete permissions.pathRules;
    delete permissions.commandRules;
  }
  if (Object.keys(permissions).length > 0) out.permissions = permissions;
  return out;
}

type PathRule = NonNullable<NonNullable<LoviaSettings["permissions"]>["pathRules"]>[number];

/** Each rule's `deny` parts, nothing else: `{read: "allow", write: "deny"}` keeps only the write. */
function denyParts(rules: readonly PathRule[]): PathRule[] {
  const out: PathRule[] = [];
  for (const r of rules) {
    const kept: PathRule = { pattern: r.pattern };
    if (r.read === "deny") kept.read = "deny";
    if (r.write === "deny") kept.write = "deny";
    if (kept.read || kept.write) out.push(kept);
  }
  return out;
}

/** One setting section's values by where they are set, as `WorkspaceConfiguration.inspect()` gives them. */
export interface InspectedSection {
  defaultValue?: unknown;
  /** User settings (and a remote window's machine settings): the user's own choices. */
  globalValue?: unknown;
  /** A `.code-workspace` file, or a single folder's `.vscode/settings.json`: the repository's. */
  workspaceValue?: unknown;
  /** A folder's `.vscode/settings.json` in a multi-root workspace: the repository's too. */
  workspaceFolderValue?: unknown;
}

/** `b` over `a`, objects merged key by key (arrays and scalars replaced), as VS Code layers scopes. */
function layered(a: unknown, b: unknown): unknown {
  if (!isPlainObject(a) || !isPlainObject(b)) return b === undefined ? a : b;
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = layered(a[k], v);
  return out;
}

/**
 * The settings of an untrusted workspace (Restricted Mode). The user's own values (defaults,
 * then user settings) apply as {@link serverSettings} restricts them; the workspace's values —
 * which the repository controls through `.vscode/settings.json` or a `.code-workspace` file —
 * may only add: more denied paths and more `deny` path rules. They never remove a denied path
 * (an empty list adds nothing), never produce an `allow` or `ask`, and nothing else of theirs
 * is read (preset, agent, MCP servers, model, limits, ...). The server applies the same rule
 * once the client says it is untrusted (lovia_server/protocol/settings.py `restrict_untrusted`), and keeps
 * its default denied paths besides.
 */
export function restrictedSettings(inspected: InspectedSection | undefined): LoviaSettings {
  const user = layered(inspected?.defaultValue, inspected?.globalValue);
  const out = serverSettings(user, false);
  const permissions: NonNullable<LoviaSettings["permissions"]> = out.permissions ?? { preset: "readonly" };
  const denied = [...(permissions.deniedPaths ?? [])];
  const rules = [...(permissions.pathRules ?? [])];
  for (const scope of [inspected?.workspaceValue, inspected?.workspaceFolderValue]) {
    const perms = isPlainObject(scope) && isPlainObject(scope.permissions) ? scope.permissions : {};
    if (Array.isArray(perms.deniedPaths)) {
      for (const p of perms.deniedPaths) if (typeof p === "string" && p.trim() && !denied.includes(p)) denied.push(p);
    }
    if (Array.isArray(perms.pathRules)) {
      const wellFormed = perms.pathRules.filter((r): r is PathRule => isPlainObject(r) && typeof r.pattern === "string" && r.pattern.length > 0);
      rules.push(...denyParts(wellFormed));
    }
  }
  if (denied.length > 0) permissions.deniedPaths = denied;
  if (rules.length > 0) permissions.pathRules = rules;
  out.permissions = permissions;
  return out;
}

/** `lovia.sandbox`: only well-typed keys; the server validates the domains. */
function sandboxSettings(raw: unknown): NonNullable<LoviaSettings["sandbox"]> | undefined {
  if (!isPlainObject(raw)) return undefined;
  const out: NonNullable<LoviaSettings["sandbox"]> = {};
  if (raw.enabled === "auto" || raw.enabled === "on" || raw.enabled === "off") out.enabled = raw.enabled;
  if (raw.network === "allow" || raw.network === "ask" || raw.network === "deny") out.network = raw.network;
  if (Array.isArray(raw.allowedDomains)) {
    out.allowedDomains = raw.allowedDomains.filter((d): d is string => typeof d === "string" && d.trim() !== "");
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** `lovia.subagents` as the server reads it: only well-typed keys, the rest left to defaults. */
function subagentSettings(raw: unknown): SubagentSettings | undefined {
  if (!isPlainObject(raw)) return undefined;
  const out: SubagentSettings = {};
  if (typeof raw.enabled === "boolean") out.enabled = raw.enabled;
  for (const key of ["maxConcurrent", "maxTurns"] as const) {
    const v = raw[key];
    if (typeof v === "number" && v >= 1) out[key] = Math.floor(v);
  }
  for (const key of ["maxTotalTokens", "maxSeconds"] as const) {
    const v = raw[key];
    if (v === null || (typeof v === "number" && v > 0)) out[key] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The server process environment: the extension host's plus the stored API keys. */
/** globalState key of an OpenAI-compatible server's base URL (passed as OPENAI_BASE_URL). */
export const BASE_URL_KEY = "lovia.openaiBaseUrl";

export function serverEnv(
  base: NodeJS.ProcessEnv,
  keys: Partial<Record<ApiKeyProvider["id"], string | undefined>>,
  openaiBaseUrl?: string,
): NodeJS.ProcessEnv {
  // PYTHONSAFEPATH: the server runs in the workspace folder, whose files must not shadow its
  // imports (`python -m` would otherwise put that folder first on sys.path).
  const env: NodeJS.ProcessEnv = { ...base, PYTHONUNBUFFERED: "1", PYTHONSAFEPATH: "1" };
  if (openaiBaseUrl) env.OPENAI_BASE_URL = openaiBaseUrl;
  for (const provider of API_KEY_PROVIDERS) {
    const value = keys[provider.id];
    if (value) env[provider.env] = value;
  }
  return env;
}

/** Expand `${workspaceFolder}`, `${userHome}` and `~` in a configured interpreter path. */
export function expandPythonPath(value: string, workspaceFolder: string | undefined, home: string): string {
  let out = value.trim();
  if (out.startsWith("~/")) out = home + out.slice(1);
  out = out.replace(/\$\{userHome\}/g, home);
  if (workspaceFolder !== undefined) out = out.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  return out;
}
