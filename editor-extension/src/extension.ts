import * as vscode from "vscode";
import { agentCommands } from "./agents/agentCommands";
import { AGENTS_VIEW_ID, AgentsTreeProvider, type AgentNode } from "./agents/agentsView";
import { WORKTREE_SCHEME, WorktreeFiles } from "./agents/worktreeFiles";
import { WorktreeReview } from "./agents/worktreeReview";
import { WorktreeRuns } from "./agents/worktreeRuns";
import { ApprovalManager } from "./approvals/approvalManager";
import { BEFORE_SCHEME, RunChangesView } from "./approvals/changes";
import { ORIGINAL_SCHEME, PROPOSED_SCHEME, ProposalContentProvider } from "./approvals/proposals";
import { CHAT_VIEW_ID, ChatViewProvider } from "./chat/chatView";
import { routeCommand } from "./chat/codeActions";
import { ChatController, type ChatHost, type PanelPlace } from "./chat/controller";
import type { ModelChoice } from "./chat/messages";
import { listCommands } from "./chat/commandList";
import { resolveMentions, searchMentions } from "./chat/mentionSearch";
import { pickModel } from "./chat/modelPicker";
import { MCP_VIEW_ID, McpTreeProvider } from "./mcp/mcpView";
import type { McpRow } from "./mcp/mcpModel";
import { EventStore } from "./protocol/eventStore";
import type { CheckpointInfo, ContextRef, SessionSummary } from "./protocol/types";
import { CHECKPOINT_SCHEME, RestoreFlow } from "./restore/restoreFlow";
import { VsCodeRestoreUi } from "./restore/vscodeRestoreUi";
import { ServerHost } from "./server/serverHost";
import { API_KEY_PROVIDERS } from "./server/settings";
import { RunStatusBar } from "./statusBar";

/** What `activate` returns (used by tests and by other extensions). */
export interface LoviaExtensionApi {
  host: ServerHost;
  store: EventStore;
  controller: ChatController;
  approvals: ApprovalManager;
  /** The worktree runs the Agents view shows. */
  agents: WorktreeRuns;
  log: vscode.LogOutputChannel;
}

let active: LoviaExtensionApi | undefined;

const PLACE_KEY = "lovia.panelPlace";
/** Notices of the chat panel the user dismissed (the "not sandboxed" one). */
const NOTICES_KEY = "lovia.dismissedNotices";
const MODEL_KEY = "lovia.modelChoice";

function toContextRef(editor: vscode.TextEditor, selection: vscode.Selection): ContextRef {
  return {
    uri: editor.document.uri.toString(),
    range: {
      start: { line: selection.start.line, character: selection.start.character },
      end: { line: selection.end.line, character: selection.end.character },
    },
  };
}

async function openLocation(uri: string, line?: number): Promise<void> {
  const target = vscode.Uri.parse(uri, true);
  const options: vscode.TextDocumentShowOptions = { preview: true };
  if (line !== undefined && line >= 1) {
    const pos = new vscode.Position(line - 1, 0);
    options.selection = new vscode.Range(pos, pos);
  }
  await vscode.window.showTextDocument(target, options);
}

/** An answer's code block at the cursor (replacing the selection), else in a new editor. */
async function insertCode(text: string, language: string): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor) {
    await editor.edit((edit) => {
      for (const selection of editor.selections) edit.replace(selection, text);
    });
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ content: text, ...(language ? { language } : {}) });
  await vscode.window.showTextDocument(doc);
}

function describeSession(s: SessionSummary): vscode.QuickPickItem & { session: SessionSummary } {
  const when = typeof s.updatedAt === "number" ? new Date(s.updatedAt).toLocaleString() : String(s.updatedAt ?? "");
  return {
    label: `${s.resumable ? "$(debug-pause) " : ""}${s.title || "(untitled)"}`,
    description: s.resumable ? "interrupted — resumable" : (s.lastRunStatus ?? ""),
    detail: when,
    session: s,
  };
}

export async function activate(context: vscode.ExtensionContext): Promise<LoviaExtensionApi> {
  const log = vscode.window.createOutputChannel("lovia", { log: true });
  const host = new ServerHost(context, log);
  const store = new EventStore(host.lovia, {
    onError: (runId, err) => log.warn(`replay of run ${runId} failed: ${err instanceof Error ? err.message : String(err)}`),
  });
  host.lovia.onEvent((event) => store.ingest(event));
  const mcpView = new McpTreeProvider(host.lovia, log);
  host.lovia.onEvent((event) => mcpView.onEvent(event));

  const proposals = new ProposalContentProvider();
  const changes = new RunChangesView();
  const restoreUi = new VsCodeRestoreUi();
  const restoreFlow = new RestoreFlow(host.lovia, restoreUi);
  const chatHost: ChatHost = {
    openLocation,
    openDiff: (_runId, approvalId) => approvals.openDiff(approvalId),
    openChange: (change) => changes.open(change),
    copy: async (text) => {
      await vscode.env.clipboard.writeText(text);
    },
    insertCode,
    resolveMentions,
    proposalEdits: (approvalId) => approvals.editsFor(approvalId),
    setApiKey: async () => {
      await vscode.commands.executeCommand("lovia.setApiKey");
    },
    defaultCwd: () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    isTrusted: () => vscode.workspace.isTrusted,
    chooseModel: () => pickModel({ context, restartForNewEnv: (what) => restartForNewEnv(what) }),
    loadPlace: () => context.workspaceState.get<PanelPlace>(PLACE_KEY) ?? {},
    savePlace: (place) => void context.workspaceState.update(PLACE_KEY, place),
    loadModel: () => context.workspaceState.get<ModelChoice>(MODEL_KEY) ?? { kind: "default" },
    saveModel: (choice) => void context.workspaceState.update(MODEL_KEY, choice),
    restoreCheckpoint: (checkpointId) => restoreFlow.restoreTo(checkpointId),
    compareCheckpoint: (checkpointId) => restoreFlow.compare(checkpointId),
    noticeDismissed: (text) => (context.globalState.get<string[]>(NOTICES_KEY) ?? []).includes(text),
    worktreeRunStarted: () => void agents.refresh(),
    dismissNotice: (text) => {
      const seen = context.globalState.get<string[]>(NOTICES_KEY) ?? [];
      if (!seen.includes(text)) void context.globalState.update(NOTICES_KEY, [...seen, text]);
    },
  };
  // chatHost's closures reach `approvals` only once activation is done.
  const controller = new ChatController(host.lovia, store, chatHost);
  const approvals = new ApprovalManager(store, proposals, (params) => controller.approve(params));
  const chatView = new ChatViewProvider(context.extensionUri, controller, log, searchMentions, () =>
    listCommands(host.lovia, chatHost.defaultCwd()),
  );
  host.commandRouter = (command, args, next) =>
    routeCommand(command, args, next, {
      reveal: () => chatView.reveal(),
      openSession: (sessionId) => controller.openSession(sessionId),
      input: (prompt, placeHolder) => Promise.resolve(vscode.window.showInputBox({ prompt, placeHolder, ignoreFocusOut: true })),
    });
  const statusBar = new RunStatusBar(store);
  const agents = new WorktreeRuns(host.lovia, store, {
    onError: (err) => log.warn(`worktree runs: ${err instanceof Error ? err.message : String(err)}`),
  });
  const agentsTree = new AgentsTreeProvider(agents);
  const agentsView = vscode.window.createTreeView<AgentNode>(AGENTS_VIEW_ID, { treeDataProvider: agentsTree });
  const worktreeFiles = new WorktreeFiles(agents);
  const review = new WorktreeReview(host.lovia, agents, proposals, worktreeFiles);

  host.onDidChangeState((state, detail) => {
    controller.setServerState(state, detail);
    statusBar.setServerState(state);
    if (state === "running") {
      if (detail === "restarted") {
        log.info("lovia server restarted: catching up on runs");
        void controller.resync();
      } else {
        void controller.refreshSessions();
      }
      void controller.serverReady();
      void mcpView.refresh();
      void agents.refresh();
    }
  });

  const setApiKey = async (): Promise<void> => {
    const pick = await vscode.window.showQuickPick(
      API_KEY_PROVIDERS.map((p) => ({ label: p.label, description: p.env, provider: p })),
      { title: "lovia: set API key", placeHolder: "Which provider?" },
    );
    if (!pick) return;
    const value = await vscode.window.showInputBox({
      title: `lovia: ${pick.provider.label} API key`,
      prompt: `Stored in VS Code's secret storage and passed to the server as ${pick.provider.env}.`,
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : "Enter a key (use “Remove API Key” to delete one)."),
    });
    if (value === undefined) return;
    await context.secrets.store(pick.provider.secretKey, value.trim());
    await restartForNewEnv(`${pick.provider.env} saved.`);
  };

  const restartForNewEnv = async (what: string): Promise<void> => {
    if (store.liveRuns().length > 0) {
      const choice = await vscode.window.showInformationMessage(
        `lovia: ${what} The server must restart to use it; a live run will be interrupted (and can be resumed).`,
        "Restart Now",
        "Later",
      );
      if (choice !== "Restart Now") return;
    } else {
      void vscode.window.showInformationMessage(`lovia: ${what} Restarting the server.`);
    }
    await host.restart();
  };

  const clearApiKey = async (): Promise<void> => {
    const pick = await vscode.window.showQuickPick(
      API_KEY_PROVIDERS.map((p) => ({ label: p.label, description: p.env, provider: p })),
      { title: "lovia: remove API key" },
    );
    if (!pick) return;
    await context.secrets.delete(pick.provider.secretKey);
    await restartForNewEnv(`${pick.provider.env} removed.`);
  };

  const pickSession = async (onlyResumable: boolean): Promise<SessionSummary | undefined> => {
    let sessions: SessionSummary[];
    try {
      sessions = (await host.lovia.sessions({ limit: 100 })).sessions ?? [];
    } catch (err) {
      void vscode.window.showErrorMessage(`lovia: cannot list sessions: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
    if (onlyResumable) sessions = sessions.filter((s) => s.resumable && s.lastRunId);
    if (sessions.length === 0) {
      void vscode.window.showInformationMessage(onlyResumable ? "lovia: no interrupted run to resume." : "lovia: no sessions yet.");
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(sessions.map(describeSession), {
      title: onlyResumable ? "lovia: resume an interrupted run" : "lovia: open a session",
      matchOnDescription: true,
    });
    return pick?.session;
  };

  /** A restore point of the shown session, newest first, from a quick pick. */
  const pickCheckpoint = async (title: string): Promise<CheckpointInfo | undefined> => {
    const sessionId = controller.activeSessionId;
    if (sessionId === undefined) {
      void vscode.window.showInformationMessage("lovia: open a session in the lovia panel first.");
      return undefined;
    }
    let listed;
    try {
      listed = await host.lovia.checkpoints({ sessionId });
    } catch (err) {
      void vscode.window.showErrorMessage(`lovia: cannot list restore points: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
    if (!listed.available || listed.checkpoints.length === 0) {
      const why = listed.available ? "this session has no restore points yet (a turn gets one before it changes files)" : (listed.reason ?? "restore points are off");
      void vscode.window.showInformationMessage(`lovia: ${why}.`);
      return undefined;
    }
    const items = [...listed.checkpoints].reverse().map((c) => ({
      label: `${c.kind === "turn" ? "$(history)" : "$(discard)"} ${c.label}`,
      description: new Date(c.createdAt).toLocaleString(),
      detail:
        c.changedCount > 0
          ? `${c.changedCount} file${c.changedCount === 1 ? "" : "s"} changed after it: ${c.changedFiles
              .slice(0, 5)
              .map((f) => vscode.workspace.asRelativePath(f.path))
              .join(", ")}${c.changedCount > 5 ? ", …" : ""}`
          : "no changes after it",
      checkpoint: c,
    }));
    return (await vscode.window.showQuickPick(items, { title, matchOnDetail: true }))?.checkpoint;
  };

  const commands: [string, (...args: unknown[]) => unknown][] = [
    [
      "lovia.runSelection",
      async () => {
        const editor = vscode.window.activeTextEditor;
        if (!editor) return;
        const selection = editor.selection;
        const text = editor.document.getText(selection).trim();
        if (!text) {
          void vscode.window.showInformationMessage("lovia: select the text to send as a prompt.");
          return;
        }
        chatView.reveal();
        await controller.send(text, "prompt", [toContextRef(editor, selection)]);
      },
    ],
    [
      "lovia.newSession",
      () => {
        controller.newSession();
        chatView.reveal();
      },
    ],
    [
      "lovia.openSession",
      async () => {
        const s = await pickSession(false);
        if (s) {
          chatView.reveal();
          await controller.openSession(s.sessionId);
        }
      },
    ],
    [
      "lovia.resumeRun",
      async (runId?: unknown) => {
        let id = typeof runId === "string" ? runId : undefined;
        if (!id) id = (await pickSession(true))?.lastRunId ?? undefined;
        if (!id) return;
        chatView.reveal();
        await controller.resume(id);
      },
    ],
    [
      "lovia.cancelRun",
      async (runId?: unknown) => {
        const id = typeof runId === "string" ? runId : (controller.liveRun()?.runId ?? store.liveRuns().at(-1)?.runId);
        if (id) await controller.cancel(id);
      },
    ],
    ["lovia.mcp.refresh", () => mcpView.refresh()],
    ["lovia.mcp.restart", (row?: unknown) => mcpView.restart(row as McpRow | undefined)],
    ["lovia.mcp.openLog", (row?: unknown) => mcpView.openLog(row as McpRow | undefined)],
    ["lovia.setApiKey", setApiKey],
    ["lovia.clearApiKey", clearApiKey],
    ["lovia.openServerLog", () => log.show()],
    ["lovia.restartServer", () => host.restart()],
    ["lovia.installServer", () => host.install()],
    ["lovia.chooseModel", () => controller.chooseModel()],
    [
      "lovia.showStatus",
      async () => {
        try {
          const status = await host.lovia.status();
          const doc = await vscode.workspace.openTextDocument({ language: "json", content: JSON.stringify(status, null, 2) });
          await vscode.window.showTextDocument(doc, { preview: true });
        } catch (err) {
          void vscode.window.showErrorMessage(`lovia: status failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      },
    ],
    ["lovia.approval.accept", (arg?: unknown) => approvals.decideFromCommand(arg, "allow_once")],
    ["lovia.approval.acceptAlways", (arg?: unknown) => approvals.decideFromCommand(arg, "allow_always")],
    ["lovia.approval.reject", (arg?: unknown) => approvals.decideFromCommand(arg, "reject_once")],
    ["lovia.approval.keepHunk", (id: unknown, hunk: unknown) => approvals.keepHunk(String(id), String(hunk))],
    ["lovia.approval.rejectHunk", (id: unknown, hunk: unknown) => approvals.rejectHunk(String(id), String(hunk))],
    [
      "lovia.restoreCheckpoint",
      async (id?: unknown) => {
        const checkpointId = typeof id === "string" ? id : (await pickCheckpoint("lovia: restore the files to…"))?.checkpointId;
        if (checkpointId) await controller.restoreCheckpoint(checkpointId);
      },
    ],
    [
      "lovia.compareWithCheckpoint",
      async (id?: unknown) => {
        const checkpointId = typeof id === "string" ? id : (await pickCheckpoint("lovia: compare with…"))?.checkpointId;
        if (!checkpointId) return;
        try {
          await restoreFlow.compare(checkpointId);
        } catch (err) {
          void vscode.window.showErrorMessage(`lovia: ${err instanceof Error ? err.message : String(err)}`);
        }
      },
    ],
    ...agentCommands({
      client: host.lovia,
      runs: agents,
      files: worktreeFiles,
      review,
      view: agentsView,
      openInPanel: async (sessionId) => {
        chatView.reveal();
        await controller.openSession(sessionId);
      },
      startWorktreeRun: (prompt) => controller.startWorktreeRun(prompt),
      cancel: (runId) => controller.cancel(runId),
    }),
    ["lovia.restore.confirm", () => restoreUi.answer(restoreUi.defaultChoice())],
    ["lovia.restore.confirmFilesOnly", () => restoreUi.answer("filesOnly")],
    ["lovia.restore.cancel", () => restoreUi.answer(undefined)],
  ];

  context.subscriptions.push(
    log,
    host,
    store,
    controller,
    approvals,
    proposals,
    changes,
    chatView,
    statusBar,
    mcpView,
    agents,
    agentsTree,
    agentsView,
    review,
    vscode.window.registerTreeDataProvider(MCP_VIEW_ID, mcpView),
    vscode.workspace.registerTextDocumentContentProvider(WORKTREE_SCHEME, worktreeFiles),
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chatView, { webviewOptions: { retainContextWhenHidden: false } }),
    vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, proposals.forScheme(ORIGINAL_SCHEME)),
    vscode.workspace.registerFileSystemProvider(PROPOSED_SCHEME, proposals.fileSystem(), { isCaseSensitive: true }),
    vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, changes),
    restoreUi,
    vscode.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, restoreUi),
    vscode.languages.registerCodeLensProvider({ scheme: PROPOSED_SCHEME }, approvals),
    // Worktree reviews share the proposals' scheme: their lenses answer only their own documents.
    vscode.languages.registerCodeLensProvider({ scheme: PROPOSED_SCHEME }, review),
    ...commands.map(([id, fn]) => vscode.commands.registerCommand(id, fn)),
  );

  active = { host, store, controller, approvals, agents, log };
  void host.start();
  return active;
}

export async function deactivate(): Promise<void> {
  const api = active;
  active = undefined;
  if (api) await api.host.stop();
}
