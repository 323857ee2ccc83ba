import { describe, expect, it } from "vitest";
import { __mock, Uri } from "../vscode-mock/vscode";
import {
  buildInitializationOptions,
  expandPythonPath,
  restrictedSettings,
  serverEnv,
  serverSettings,
} from "../../src/server/settings";
import { readFileSync } from "node:fs";

const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
  contributes: { configuration: { properties: Record<string, { scope?: string }> } };
};
import { fromPythonExtension } from "../../src/server/python";
import { beforeEach } from "vitest";

describe("settings → server", () => {
  it("builds initializationOptions.lovia per the protocol (the edit mode is a setting)", () => {
    expect(buildInitializationOptions({ stateDir: "/s", trusted: true })).toEqual({
      lovia: {
        protocolVersion: 1, client: "vscode", approvals: "events", progress: true, trusted: true, stateDir: "/s",
        editorIntel: { diagnostics: true, locations: true, symbols: true },
      },
    });
    expect(buildInitializationOptions({ stateDir: undefined, trusted: false }).lovia).toEqual({
      protocolVersion: 1, client: "vscode", approvals: "events", progress: true, trusted: false,
      editorIntel: { diagnostics: true, locations: true, symbols: true },
    });
  });

  const raw = {
    pythonPath: "/usr/bin/python3",
    editMode: "server",
    openDiffOnApproval: true,
    trace: { server: "off" },
    model: " openai:gpt-4.1-mini ",
    agent: "agents/review.py:reviewer",
    maxTurns: 20,
    approvalTimeoutSeconds: null,
    mcpServers: {},
    permissions: {
      preset: "trusted",
      write: "allow",
      pathRules: [{ pattern: "secrets/**", read: "deny", write: "deny" }, { pattern: "gen/**", write: "allow" }, { nope: 1 }],
      commandRules: [{ pattern: "npm test", decision: "allow" }],
      deniedPaths: null,
    },
  };

  it("drops extension-only and empty keys so server defaults apply (trusted)", () => {
    expect(serverSettings(raw, true)).toEqual({
      model: "openai:gpt-4.1-mini",
      agent: "agents/review.py:reviewer",
      maxTurns: 20,
      editMode: "server",
      permissions: {
        preset: "trusted",
        write: "allow",
        pathRules: [{ pattern: "secrets/**", read: "deny", write: "deny" }, { pattern: "gen/**", write: "allow" }],
        commandRules: [{ pattern: "npm test", decision: "allow" }],
      },
    });
  });

  it("passes protected paths as additions only (blank and non-string entries dropped)", () => {
    const perms = { protectedPaths: ["deploy/**", "", 3, "~/.kube"] };
    expect(serverSettings({ permissions: perms }, true).permissions).toEqual({ protectedPaths: ["deploy/**", "~/.kube"] });
    expect(serverSettings({ permissions: { protectedPaths: [] } }, true).permissions).toBeUndefined();
  });

  it("passes readOnlyCommands when it is a boolean", () => {
    expect(serverSettings({ permissions: { readOnlyCommands: false } }, true).permissions).toEqual({ readOnlyCommands: false });
    expect(serverSettings({ permissions: { readOnlyCommands: "no" } }, true).permissions).toBeUndefined();
  });

  it("passes model prices on to the server", () => {
    const prices = { "openai:mine": { input: 0.5, output: 1.5 } };
    expect(serverSettings({ ...raw, modelPrices: prices }, true).modelPrices).toEqual(prices);
    expect(serverSettings({ ...raw, modelPrices: {} }, true).modelPrices).toBeUndefined();
  });

  it("passes the prompt-caching settings and per-provider options; drops invalid values", () => {
    const options = { openai: { prompt_cache_key: "team" }, anthropic: { cache: false } };
    expect(serverSettings({ promptCaching: false, promptCacheTtl: "1h", providerOptions: options }, true)).toEqual({
      promptCaching: false,
      promptCacheTtl: "1h",
      providerOptions: options,
    });
    expect(serverSettings({ promptCaching: "no", promptCacheTtl: "1d", providerOptions: { openai: "key" } }, true)).toEqual({});
  });

  it("passes diagnosticsAfterEdits; drops a non-boolean", () => {
    expect(serverSettings({ diagnosticsAfterEdits: false }, true)).toEqual({ diagnosticsAfterEdits: false });
    expect(serverSettings({ diagnosticsAfterEdits: "off" }, true)).toEqual({});
  });

  it("passes the restore-point settings; drops invalid values", () => {
    expect(serverSettings({ restorePoints: { enabled: false, maxStoreMB: 64, maxFileMB: 2 } }, true)).toEqual({
      restorePoints: { enabled: false, maxStoreMB: 64, maxFileMB: 2 },
    });
    expect(serverSettings({ restorePoints: { enabled: "yes", maxStoreMB: -1 } }, true)).toEqual({});
  });

  it("passes the worktree-run limit; drops invalid values", () => {
    expect(serverSettings({ worktrees: { maxConcurrent: 2 } }, true)).toEqual({ worktrees: { maxConcurrent: 2 } });
    expect(serverSettings({ worktrees: { maxConcurrent: 0 } }, true)).toEqual({});
    expect(serverSettings({ worktrees: "many" }, true)).toEqual({});
  });

  it("passes the sandbox settings; drops invalid values", () => {
    const sandbox = { enabled: "on", network: "deny", allowedDomains: ["pypi.org", "*.pythonhosted.org"] };
    expect(serverSettings({ sandbox }, true)).toEqual({ sandbox });
    expect(serverSettings({ sandbox: { enabled: "maybe", network: 1, allowedDomains: [3, ""] } }, true)).toEqual({
      sandbox: { allowedDomains: [] },
    });
    expect(serverSettings({ sandbox: "off" }, true)).toEqual({});
  });

  it("passes the review-first write setting and the edit mode; drops unknown values", () => {
    expect(serverSettings({ permissions: { write: "ask" }, editMode: "auto" }, true)).toEqual({
      editMode: "auto",
      permissions: { write: "ask" },
    });
    expect(serverSettings({ permissions: { write: "sometimes" }, editMode: "bogus" }, true)).toEqual({});
  });

  it("untrusted: readonly preset, no user agent or MCP servers, rules only where they deny", () => {
    const s = serverSettings({ ...raw, mcpServers: { x: { command: "x" } } }, false);
    expect(s.agent).toBeUndefined();
    expect(s.mcpServers).toBeUndefined();
    expect(s.permissions?.preset).toBe("readonly");
    expect(s.permissions?.write).toBeUndefined();
    expect(s.permissions?.commandRules).toBeUndefined();
    expect(s.permissions?.pathRules).toEqual([{ pattern: "secrets/**", read: "deny", write: "deny" }]);
    // A write-deny rule stays a write-deny rule: it never becomes a read allow.
    expect(serverSettings({ permissions: { pathRules: [{ pattern: "~/.ssh/**", read: "allow", write: "deny" }, { pattern: "a", read: "ask" }] } }, false).permissions).toEqual({
      preset: "readonly",
      pathRules: [{ pattern: "~/.ssh/**", write: "deny" }],
    });
    expect(serverSettings({}, false)).toEqual({ permissions: { preset: "readonly" } });
    expect(serverSettings(undefined, true)).toEqual({});
  });

  describe("Restricted Mode: the workspace's settings only add restrictions", () => {
    const user = {
      model: "openai:gpt-4.1-mini",
      maxTurns: 20,
      permissions: { deniedPaths: ["private/**"], pathRules: [{ pattern: "notes/**", read: "allow", write: "deny" }] },
    };
    const attack = {
      model: "openai:attacker-pick",
      agent: "evil.py:agent",
      maxTurns: 10_000,
      mcpServers: { evil: { command: "sh" } },
      restorePoints: { enabled: false },
      permissions: {
        preset: "trusted",
        write: "allow",
        deniedPaths: [],
        pathRules: [{ pattern: "~/.ssh/**", read: "allow", write: "deny" }, { pattern: "**", read: "allow", write: "allow" }, { pattern: "", read: "deny" }, { pattern: "x", read: "bogus" }],
        commandRules: [{ pattern: "", decision: "allow" }],
      },
    };

    it("an empty denied list removes nothing; allow rules, preset, agent, MCP, model and limits are ignored", () => {
      for (const where of ["workspaceValue", "workspaceFolderValue"] as const) {
        expect(restrictedSettings({ globalValue: user, [where]: attack })).toEqual({
          model: "openai:gpt-4.1-mini",
          maxTurns: 20,
          permissions: { preset: "readonly", deniedPaths: ["private/**"], pathRules: [{ pattern: "notes/**", write: "deny" }, { pattern: "~/.ssh/**", write: "deny" }] },
        });
      }
      // With no user list the server keeps its defaults (and adds them anyway when untrusted).
      expect(restrictedSettings({ workspaceValue: attack })).toEqual({ permissions: { preset: "readonly", pathRules: [{ pattern: "~/.ssh/**", write: "deny" }] } });
    });

    it("the workspace may add denied paths and deny rules, from both workspace scopes", () => {
      const s = restrictedSettings({
        defaultValue: { maxTurns: 50, permissions: { preset: "coding", deniedPaths: null } },
        globalValue: user,
        workspaceValue: { permissions: { deniedPaths: ["secrets/**", "private/**", 7, ""] } },
        workspaceFolderValue: { permissions: { deniedPaths: ["*.tfstate"], pathRules: [{ pattern: "vendor/**", read: "deny" }] } },
      });
      expect(s.permissions).toEqual({
        preset: "readonly",
        deniedPaths: ["private/**", "secrets/**", "*.tfstate"],
        pathRules: [{ pattern: "notes/**", write: "deny" }, { pattern: "vendor/**", read: "deny" }],
      });
      expect(s.maxTurns).toBe(20);
      expect(restrictedSettings(undefined)).toEqual({ permissions: { preset: "readonly" } });
    });
  });

  it("declares every setting that could loosen something as restricted in untrusted workspaces", () => {
    const restricted = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations;
    const properties = Object.keys(manifest.contributes.configuration.properties);
    for (const key of restricted) expect(properties, key).toContain(key);
    for (const key of ["lovia.agent", "lovia.pythonPath", "lovia.model", "lovia.mcpServers", "lovia.permissions.preset", "lovia.permissions.write", "lovia.permissions.commandRules"]) {
      expect(restricted, key).toContain(key);
    }
    // The two the workspace may add to are read through inspect(), not dropped by VS Code.
    expect(restricted).not.toContain("lovia.permissions.deniedPaths");
    expect(restricted).not.toContain("lovia.permissions.pathRules");
    const props = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
    expect(props["lovia.pythonPath"]!.scope).toBe("machine");
  });

  it("passes API keys in the server environment without touching the base env", () => {
    const base = { PATH: "/bin", OPENAI_API_KEY: "from-shell" };
    const env = serverEnv(base, { openai: "sk-1", anthropic: undefined });
    expect(env.OPENAI_API_KEY).toBe("sk-1");
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(env.PATH).toBe("/bin");
    expect(env.PYTHONUNBUFFERED).toBe("1");
    expect(env.PYTHONSAFEPATH).toBe("1"); // the workspace folder (its cwd) cannot shadow its imports
    expect(base.OPENAI_API_KEY).toBe("from-shell");
    expect(serverEnv(base, {}).OPENAI_API_KEY).toBe("from-shell");
  });

  it("expands ${workspaceFolder}, ${userHome} and ~ in pythonPath", () => {
    expect(expandPythonPath("${workspaceFolder}/.venv/bin/python", "/w", "/h")).toBe("/w/.venv/bin/python");
    expect(expandPythonPath("~/py/bin/python", "/w", "/h")).toBe("/h/py/bin/python");
    expect(expandPythonPath(" ${userHome}/x ", undefined, "/h")).toBe("/h/x");
  });
});

describe("fromPythonExtension", () => {
  beforeEach(() => __mock.reset());

  it("returns nothing without the Python extension", async () => {
    expect(await fromPythonExtension(undefined)).toBeUndefined();
  });

  it("uses the Python extension's active interpreter (environments API)", async () => {
    let activated = false;
    __mock.state.extensions.set("ms-python.python", {
      isActive: false,
      activate: () => {
        activated = true;
        return Promise.resolve({
          environments: {
            getActiveEnvironmentPath: () => ({ path: "/envs/a" }),
            resolveEnvironment: () => Promise.resolve({ executable: { uri: Uri.file("/envs/a/bin/python") } }),
          },
        });
      },
    });
    expect(await fromPythonExtension(undefined)).toBe("/envs/a/bin/python");
    expect(activated).toBe(true);
  });

  it("falls back to the legacy execution details, and to nothing when the extension fails", async () => {
    __mock.state.extensions.set("ms-python.python", {
      isActive: true,
      exports: { settings: { getExecutionDetails: () => ({ execCommand: ["/legacy/python"] }) } },
    });
    expect(await fromPythonExtension(undefined)).toBe("/legacy/python");
    __mock.state.extensions.set("ms-python.python", { isActive: false, activate: () => Promise.reject(new Error("broken")) });
    expect(await fromPythonExtension(undefined)).toBeUndefined();
  });
});
