import * as vscode from "vscode";
import { runningChildren } from "./chat/children";
import type { ServerState } from "./chat/messages";
import type { EventStore } from "./protocol/eventStore";
import type { RunView } from "./protocol/runView";

export const RUN_LIVE_CONTEXT = "lovia.runLive";

function excerpt(text: string | undefined, max = 40): string {
  const one = (text ?? "").replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** Text, tooltip and colour for the status bar item. Pure, for tests. */
export function describeStatus(
  server: ServerState,
  live: RunView[],
  children = 0,
  childWaiting = false,
): { text: string; tooltip: string; warning: boolean } {
  if (server === "stopped") return { text: "$(error) lovia", tooltip: "lovia server is stopped — click to open the log", warning: true };
  if (server === "starting" || server === "restarting") {
    return { text: "$(sync~spin) lovia", tooltip: `lovia server is ${server}`, warning: false };
  }
  if (live.length === 0) return { text: "$(comment-discussion) lovia", tooltip: "lovia: idle — click to open the chat", warning: false };
  const run = live[live.length - 1]!;
  const activity = childWaiting && !(run.activity ?? "").startsWith("waiting") ? "a subagent is waiting for you" : (run.activity ?? "working");
  const waiting = activity.startsWith("waiting") || childWaiting;
  const more = live.length > 1 ? ` (+${live.length - 1})` : "";
  const todos = run.todos.length > 0 ? ` · ${run.todos.filter((t) => t.status === "completed").length}/${run.todos.length}` : "";
  const subagents = children > 0 ? ` · $(organization) ${children}` : "";
  const subagentsTip = children > 0 ? `\n${children} subagent${children === 1 ? "" : "s"} running` : "";
  return {
    text: `${waiting ? "$(bell-dot)" : "$(loading~spin)"} lovia: ${excerpt(activity, 32)}${todos}${subagents}${more}`,
    tooltip: `lovia run: ${excerpt(run.prompt, 80)}\n${activity}${subagentsTip}`,
    warning: waiting,
  };
}

/** Status bar item for the live run (what it is doing, whether it waits for you). */
export class RunStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private server: ServerState = "starting";
  private live = false;

  constructor(private readonly store: EventStore) {
    this.item = vscode.window.createStatusBarItem("lovia.status", vscode.StatusBarAlignment.Left, 50);
    this.item.name = "lovia";
    this.disposables.push(store.onDidChange(() => this.update()));
    this.update();
    this.item.show();
  }

  setServerState(state: ServerState): void {
    this.server = state;
    this.update();
  }

  update(): void {
    // Subagent runs (parentRunId) show through their parent.
    const all = this.store.liveRuns();
    const live = all.filter((r) => r.parentRunId === undefined);
    const childWaiting = all.some((r) => r.parentRunId !== undefined && (r.activity ?? "").startsWith("waiting"));
    const d = describeStatus(this.server, live, runningChildren(all), childWaiting);
    this.item.text = d.text;
    this.item.tooltip = d.tooltip;
    this.item.backgroundColor = d.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.command = this.server === "stopped" ? "lovia.openServerLog" : "lovia.chat.focus";
    const isLive = live.length > 0;
    if (isLive !== this.live) {
      this.live = isLive;
      void vscode.commands.executeCommand("setContext", RUN_LIVE_CONTEXT, isLive);
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.item.dispose();
  }
}
