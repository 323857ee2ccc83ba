/**
 * The MCP view's model: the workspace's pooled MCP servers as `lovia/status` lists them, turned
 * into tree rows. Pure (no `vscode`), so it is tested on its own.
 */
import type { MCPServerInfo } from "../protocol/types";

export interface McpRow {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  /** A codicon name. */
  icon: string;
  /** `contextValue`: which inline actions the row offers. */
  context: "mcpServer" | "mcpServerWithLog" | "mcpTool" | "mcpEmpty";
  server?: string;
  log?: string;
  children?: McpRow[];
}

const STATE_ICON: Record<string, string> = {
  running: "pass-filled",
  starting: "sync~spin",
  restarting: "sync~spin",
  failed: "error",
  idle: "circle-outline",
  stopped: "circle-slash",
};

/** One row per server (state, tool count, last error), its tools as children. */
export function mcpRows(servers: MCPServerInfo[]): McpRow[] {
  if (servers.length === 0) {
    return [
      {
        id: "mcp:none",
        label: "No MCP servers configured",
        description: "lovia.mcpServers",
        tooltip: "Add servers to the lovia.mcpServers setting; the built-in agent gets their tools.",
        icon: "info",
        context: "mcpEmpty",
      },
    ];
  }
  return servers.map((s) => {
    const error = s.error ? s.error.split("\n")[0] ?? "" : "";
    const tools = s.tools.length === 1 ? "1 tool" : `${s.tools.length} tools`;
    const description = [s.state, s.state === "running" || s.tools.length > 0 ? tools : "", error].filter(Boolean).join(" · ");
    const tooltipLines = [`${s.name} (${s.transport})`, `state: ${s.state}`, `started ${s.starts} time${s.starts === 1 ? "" : "s"}`];
    if (s.error) tooltipLines.push("", s.error);
    const row: McpRow = {
      id: `mcp:${s.name}`,
      label: s.name,
      description,
      tooltip: tooltipLines.join("\n"),
      icon: STATE_ICON[s.state] ?? "circle-outline",
      context: s.log ? "mcpServerWithLog" : "mcpServer",
      server: s.name,
      children: s.tools.map((t) => ({
        id: `mcp:${s.name}:${t}`,
        label: t,
        description: "",
        tooltip: `${t} — served by ${s.name}`,
        icon: "tools",
        context: "mcpTool" as const,
        server: s.name,
      })),
    };
    if (s.log) row.log = s.log;
    return row;
  });
}
