/**
 * The MCP view in the lovia sidebar: each pooled MCP server with its state, tools and last
 * error, a restart button and its log. Refreshed when a run reports an `mcp.status` event,
 * when the server (re)starts, and on demand.
 */
import * as vscode from "vscode";
import type { LoviaClient } from "../protocol/client";
import type { LoviaEvent, MCPServerInfo } from "../protocol/types";
import { mcpRows, type McpRow } from "./mcpModel";

export const MCP_VIEW_ID = "lovia.mcp";

export class McpTreeProvider implements vscode.TreeDataProvider<McpRow>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<McpRow | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private rows: McpRow[] = [];
  private pending: Promise<void> | undefined;

  constructor(
    private readonly client: LoviaClient,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  getTreeItem(row: McpRow): vscode.TreeItem {
    const item = new vscode.TreeItem(row.label, row.children && row.children.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = row.id;
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.iconPath = new vscode.ThemeIcon(row.icon);
    item.contextValue = row.context;
    return item;
  }

  getChildren(row?: McpRow): McpRow[] {
    return row ? (row.children ?? []) : this.rows;
  }

  /** Ask the server again (one request at a time). */
  refresh(): Promise<void> {
    this.pending ??= this.load().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** Refresh on the events that change what the view shows. */
  onEvent(event: LoviaEvent): void {
    if (event.kind === "mcp.status") void this.refresh();
  }

  async restart(row: McpRow | undefined): Promise<void> {
    const name = row?.server ?? (await this.pickServer());
    if (!name) return;
    try {
      await vscode.window.withProgress({ location: { viewId: MCP_VIEW_ID } }, () => this.client.request("lovia/mcpRestart", { name }));
    } catch (err) {
      void vscode.window.showErrorMessage(`lovia: restarting MCP server ${name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    await this.refresh();
  }

  async openLog(row: McpRow | undefined): Promise<void> {
    const log = row?.log ?? this.rows.find((r) => r.server === row?.server)?.log;
    if (!log) {
      void vscode.window.showInformationMessage("lovia: this MCP server has no log (HTTP servers log on their own side).");
      return;
    }
    await vscode.window.showTextDocument(vscode.Uri.file(log), { preview: true });
  }

  private async pickServer(): Promise<string | undefined> {
    const servers = this.rows.filter((r) => r.server && r.context !== "mcpTool");
    const pick = await vscode.window.showQuickPick(
      servers.map((r) => ({ label: r.label, description: r.description })),
      { title: "lovia: restart MCP server" },
    );
    return pick?.label;
  }

  private async load(): Promise<void> {
    let servers: MCPServerInfo[] = [];
    try {
      servers = (await this.client.status()).mcpServers ?? [];
    } catch (err) {
      this.log.debug(`MCP view: lovia/status failed: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    this.rows = mcpRows(servers);
    this.changed.fire(undefined);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
