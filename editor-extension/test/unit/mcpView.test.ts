import { describe, expect, it } from "vitest";
import { mcpRows } from "../../src/mcp/mcpModel";
import { McpTreeProvider } from "../../src/mcp/mcpView";
import type { LoviaClient } from "../../src/protocol/client";
import type { LoviaEvent, MCPServerInfo } from "../../src/protocol/types";

const running: MCPServerInfo = { name: "git", transport: "stdio", state: "running", tools: ["git__log", "git__diff"], error: null, starts: 1, log: "/state/mcp-logs/git.log" };
const failed: MCPServerInfo = { name: "docs", transport: "http", state: "failed", tools: [], error: "Could not connect to MCP server 'docs'\nCheck the URL", starts: 0, log: null };

describe("the MCP view", () => {
  it("shows each server's state, tools and last error, with its tools as children", () => {
    const [git, docs] = mcpRows([running, failed]);
    expect(git).toMatchObject({ label: "git", description: "running · 2 tools", icon: "pass-filled", context: "mcpServerWithLog", log: "/state/mcp-logs/git.log" });
    expect(git!.children!.map((c) => c.label)).toEqual(["git__log", "git__diff"]);
    expect(docs).toMatchObject({ description: "failed · Could not connect to MCP server 'docs'", icon: "error", context: "mcpServer" });
    expect(docs!.tooltip).toContain("Check the URL");
    expect(mcpRows([])[0]).toMatchObject({ context: "mcpEmpty", label: "No MCP servers configured" });
  });

  it("loads from lovia/status, refreshes on mcp.status events and restarts through lovia/mcpRestart", async () => {
    const requests: [string, unknown][] = [];
    let servers = [running];
    const client = {
      status: async () => ({ mcpServers: servers }),
      request: async (method: string, params: unknown) => {
        requests.push([method, params]);
        return { server: running };
      },
    } as unknown as LoviaClient;
    const log = { debug: () => undefined } as never;
    const view = new McpTreeProvider(client, log);
    await view.refresh();
    expect(view.getChildren().map((r) => r.label)).toEqual(["git"]);
    expect(view.getTreeItem(view.getChildren()[0]!).contextValue).toBe("mcpServerWithLog");
    servers = [running, failed];
    view.onEvent({ kind: "mcp.status", server: "docs", state: "failed", tools: [] } as unknown as LoviaEvent);
    await view.refresh();
    expect(view.getChildren().map((r) => r.label)).toEqual(["git", "docs"]);
    await view.restart(view.getChildren()[1]);
    expect(requests).toEqual([["lovia/mcpRestart", { name: "docs" }]]);
    view.dispose();
  });
});
