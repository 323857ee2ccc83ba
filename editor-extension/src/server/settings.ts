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

/** The edit mode is a setting the server reads for every run, so it is not sent here. */
export function buildInitializationOptions(opts: { stateDir: string | undefined }): {
  lovia: LoviaInitializationOptions;
} {
  const lovia: LoviaInitializationOptions = {
    protocolVersion: PROTOCOL_VERSION,
    client: "vscode",
    approvals: "events",
    progress: true,
    // Large events come in slices once the server sees this client reading slowly, so that
    // answers are not stuck behind them (LoviaClient joins them).
    notificationParts: true,
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
 * Workspace Trust applied (untrusted → `readonly` preset, no user agent).
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
  if (isPlainObject(src.mcpServers) && Object.keys(src.mcpServers).length > 0) {
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
  if (isPlainObject(src.modelPrices) && Object.keys(src.modelPrices).length > 0) {
    out.modelPrices = src.modelPrices as NonNullable<LoviaSettings["modelPrices"]>;
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
  if (!trusted) {
    // Untrusted: read-only, and workspace rules may only make things stricter.
    permissions.preset = "readonly";
    if (permissions.pathRules) {
      permissions.pathRules = permissions.pathRules
        .filter((r) => r.read === "deny" || r.write === "deny")
        .map((r) => ({ pattern: r.pattern, read: r.read === "deny" ? "deny" : "allow", write: "deny" }));
    }
    delete permissions.commandRules;
  }
  if (Object.keys(permissions).length > 0) out.permissions = permissions;
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
