/**
 * The model picker: the offline demo, the configured setting, or a provider with its key
 * (kept in SecretStorage) — so a first run needs no settings file.
 */
import * as vscode from "vscode";
import type { ModelChoice } from "./messages";
import { API_KEY_PROVIDERS, BASE_URL_KEY } from "../server/settings";

type Kind = "demo" | "setting" | "openai" | "openai-responses" | "anthropic" | "compatible";

export interface PickerDeps {
  context: vscode.ExtensionContext;
  /** The server must restart to see a new key or base URL in its environment. */
  restartForNewEnv(what: string): Promise<void>;
}

/** What the model name box starts with, per provider. */
const DEFAULT_MODEL = { openai: "gpt-4.1-mini", "openai-responses": "gpt-5", anthropic: "claude-sonnet-4-5" } as const;

export async function pickModel(deps: PickerDeps): Promise<ModelChoice | undefined> {
  const items: (vscode.QuickPickItem & { kind2: Kind })[] = [
    { label: "$(beaker) Offline demo", description: "a scripted agent: no model or key needed", kind2: "demo" },
    { label: "$(settings-gear) The lovia.model setting", description: "or LOVIA_MODEL", kind2: "setting" },
    { label: "OpenAI", description: "openai:<model> (Chat Completions), key in OPENAI_API_KEY", kind2: "openai" },
    {
      label: "OpenAI, Responses API",
      description: "openai-responses:<model>: reasoning and coding models (gpt-5, o3, Codex)",
      kind2: "openai-responses",
    },
    { label: "Anthropic", description: "anthropic:<model>, key in ANTHROPIC_API_KEY", kind2: "anthropic" },
    { label: "OpenAI-compatible server", description: "vLLM, llama.cpp, Ollama, LM Studio… by base URL", kind2: "compatible" },
  ];
  const pick = await vscode.window.showQuickPick(items, { title: "lovia: choose a model", placeHolder: "Which model should the next run use?" });
  if (!pick) return undefined;
  if (pick.kind2 === "demo") return { kind: "demo" };
  if (pick.kind2 === "setting") return { kind: "default" };
  if (pick.kind2 === "compatible") return compatible(deps);
  const provider = pick.kind2;
  const name = await vscode.window.showInputBox({
    title: `lovia: ${pick.label} model`,
    value: DEFAULT_MODEL[provider],
    prompt: "The model's name at the provider.",
    validateInput: (v) => (v.trim() ? undefined : "Enter a model name."),
  });
  if (!name) return undefined;
  // both OpenAI APIs take the same key
  const ok = await ensureKey(deps, provider === "anthropic" ? "anthropic" : "openai", false);
  if (!ok) return undefined;
  return { kind: "model", model: `${provider}:${name.trim()}` };
}

async function compatible(deps: PickerDeps): Promise<ModelChoice | undefined> {
  const current = deps.context.globalState.get<string>(BASE_URL_KEY) ?? "http://127.0.0.1:8000/v1";
  const url = await vscode.window.showInputBox({
    title: "lovia: OpenAI-compatible server",
    value: current,
    prompt: "The server's base URL (it ends in /v1 for most servers).",
    validateInput: (v) => (/^https?:\/\/\S+$/.test(v.trim()) ? undefined : "Enter an http:// or https:// URL."),
  });
  if (!url) return undefined;
  const name = await vscode.window.showInputBox({
    title: "lovia: model served there",
    prompt: "The model's name as the server knows it.",
    validateInput: (v) => (v.trim() ? undefined : "Enter a model name."),
  });
  if (!name) return undefined;
  const changedUrl = url.trim() !== deps.context.globalState.get<string>(BASE_URL_KEY);
  await deps.context.globalState.update(BASE_URL_KEY, url.trim());
  // Local servers usually take any key; one is still needed by the OpenAI client.
  const keyChanged = await ensureKey(deps, "openai", true);
  if (keyChanged === undefined) return undefined;
  if (changedUrl && keyChanged !== "stored") await deps.restartForNewEnv(`OPENAI_BASE_URL set to ${url.trim()}.`);
  return { kind: "model", model: `openai:${name.trim()}` };
}

/**
 * Ask for the provider's key when none is stored. Resolves "stored" when a key was saved
 * (the server restarted), "kept" when one existed, undefined when the user gave up.
 */
async function ensureKey(
  deps: PickerDeps,
  id: "openai" | "anthropic",
  optional: boolean,
): Promise<"stored" | "kept" | undefined> {
  const provider = API_KEY_PROVIDERS.find((p) => p.id === id)!;
  if (await deps.context.secrets.get(provider.secretKey)) return "kept";
  const value = await vscode.window.showInputBox({
    title: `lovia: ${provider.label} API key`,
    prompt: optional
      ? `Stored in VS Code's secret storage and passed as ${provider.env}. A local server usually accepts any value.`
      : `Stored in VS Code's secret storage and passed to the server as ${provider.env}.`,
    password: true,
    ignoreFocusOut: true,
    value: optional ? "local" : "",
    validateInput: (v) => (v.trim() ? undefined : "Enter a key."),
  });
  if (value === undefined) return undefined;
  await deps.context.secrets.store(provider.secretKey, value.trim());
  await deps.restartForNewEnv(`${provider.env} saved.`);
  return "stored";
}
