import type * as Interpreter from "../../src/server/interpreter";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { __mock, EventEmitter, Uri } from "../vscode-mock/vscode";
import { FakeLoviaServer, waitFor } from "../support/fakeServer";
import { LanguageClient as FakeClient } from "../support/fakeLanguageClient";
import { disposeAll, makeContext } from "./helpers";
import { contentSecurityPolicy } from "../../src/chat/html";
import { describeStatus } from "../../src/statusBar";
import { createRunView } from "../../src/protocol/runView";
import type { ExtensionMessage } from "../../src/chat/messages";
import { PanelModel } from "../../media/model";
import type * as vscodeTypes from "vscode";

vi.mock("vscode-languageclient/node", () => import("../support/fakeLanguageClient"));
// Every interpreter probes as a ready lovia server: these tests are about the UI, not Python.
vi.mock("../../src/server/interpreter", async (importOriginal) => ({
  ...(await importOriginal<typeof Interpreter>()),
  probeInterpreter: (command: string) =>
    Promise.resolve({ command, runs: true, supported: true, python: "3.11.7", protocolVersion: 1, version: "0.1.0" }),
}));
const { activate, deactivate } = await import("../../src/extension");

let server: FakeLoviaServer;
let ctx: vscodeTypes.ExtensionContext;

function fakeView() {
  const incoming = new EventEmitter<unknown>();
  const posted: ExtensionMessage[] = [];
  const model = new PanelModel();
  const view = {
    visible: true,
    webview: {
      options: {} as Record<string, unknown>,
      html: "",
      cspSource: "https://webview.example",
      asWebviewUri: (u: Uri) => Uri.from({ scheme: "https", authority: "webview.example", path: u.path }),
      postMessage: (m: ExtensionMessage) => {
        posted.push(m);
        if (m.type !== "mentions" && m.type !== "commands") model.apply(JSON.parse(JSON.stringify(m)) as typeof m);
        return Promise.resolve(true);
      },
      onDidReceiveMessage: incoming.event,
    },
    onDidDispose: new EventEmitter<void>().event,
    onDidChangeVisibility: new EventEmitter<void>().event,
    show: () => undefined,
  };
  const rows = () => model.order.map((k) => model.rows.get(k)!);
  return { view, incoming, posted, model, rows };
}

beforeEach(async () => {
  __mock.reset();
  FakeClient.instances = [];
  server = new FakeLoviaServer();
  FakeClient.server = server;
  ctx = makeContext();
  await activate(ctx);
  await waitFor(() => FakeClient.instances[0]?.state === 2);
});

afterEach(async () => {
  await deactivate();
  disposeAll(ctx);
  server.detachAll();
});

describe("chat webview view", () => {
  it("serves a strict-CSP page whose only script carries the nonce", () => {
    const { view } = fakeView();
    __mock.state.webviewProviders.get("lovia.chat").resolveWebviewView(view);
    const html = view.webview.html;
    const nonce = /nonce-([A-Za-z0-9+/=]+)/.exec(html)![1]!;
    expect(nonce.length).toBeGreaterThanOrEqual(16);
    expect(html).toContain(`content="${contentSecurityPolicy("https://webview.example", nonce).replace(/'/g, "'")}"`);
    expect(html).toContain("default-src 'none'");
    expect(html).toContain(`script-src 'nonce-${nonce}'`);
    expect(html).not.toContain("unsafe-inline");
    expect(html).not.toContain("unsafe-eval");
    // Nothing remote, from any directive: only the nonce'd script and the webview's own styles.
    const csp = contentSecurityPolicy("https://webview.example", nonce);
    for (const directive of csp.split("; ")) {
      const [name, ...sources] = directive.split(" ");
      if (name === "style-src") expect(sources).toEqual(["https://webview.example", `'nonce-${nonce}'`]);
      else if (name === "script-src") expect(sources).toEqual([`'nonce-${nonce}'`]);
      else expect(sources, name).toEqual(["'none'"]);
    }
    expect(html).toContain('<meta http-equiv="x-dns-prefetch-control" content="off">');
    const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    expect(scripts[0]).toContain(`nonce="${nonce}"`);
    expect(scripts[0]).toContain('src="https://webview.example/ext/lovia/dist/webview.js"');
    expect(view.webview.options).toEqual({ enableScripts: true, localResourceRoots: [expect.objectContaining({ path: "/ext/lovia/dist" })] });
    // A new nonce each time the view is resolved.
    const second = fakeView();
    __mock.state.webviewProviders.get("lovia.chat").resolveWebviewView(second.view);
    expect(second.view.webview.html).not.toContain(nonce);
  });

  it("routes intents from the webview to the protocol and posts state back", async () => {
    const { view, incoming, posted, model, rows } = fakeView();
    __mock.state.webviewProviders.get("lovia.chat").resolveWebviewView(view);
    incoming.fire({ type: "ready" });
    await waitFor(() => posted.length > 0, 2000, "first state");
    expect(posted[0]!.type).toBe("reset");
    incoming.fire({ type: "send", text: "hello from the panel", mode: "prompt" });
    await waitFor(() => server.requestsOf("lovia/run").length === 1);
    await waitFor(() => rows().some((r) => r.type === "user"), 2000, "user message rendered");
    // After the first reset only patches follow.
    expect(posted.slice(1).every((m) => m.type === "patch")).toBe(true);
    const user = rows().find((r) => r.type === "user")!;
    expect(model.chrome!.liveRunId).toBe(user.runId);
    expect(model.chrome!.server.state).toBe("running");

    incoming.fire({ type: "openLocation", uri: "file:///work/project/src/a.ts", line: 12 });
    await waitFor(() => __mock.state.shownDocuments.length === 1);
    expect(__mock.state.shownDocuments[0]).toMatchObject({
      uri: "file:///work/project/src/a.ts",
      options: { selection: { start: { line: 11, character: 0 } } },
    });
  });

  it("ignores and logs malformed messages from the webview", async () => {
    const { view, incoming } = fakeView();
    __mock.state.webviewProviders.get("lovia.chat").resolveWebviewView(view);
    incoming.fire({ type: "send", text: 42 });
    incoming.fire({ type: "approve", runId: "r" });
    incoming.fire({ type: "approve", runId: "r", approvalId: "a", decision: "allow_forever" });
    incoming.fire("nonsense");
    const cyclic: Record<string, unknown> = { type: "copy" };
    cyclic.text = cyclic;
    incoming.fire(cyclic);
    await new Promise((r) => setTimeout(r, 20));
    expect(server.requestsOf("lovia/run")).toEqual([]);
    expect(server.requestsOf("lovia/approve")).toEqual([]);
    const warnings = __mock.state.outputLines.filter((l) => l.level === "warn" && l.text.includes("malformed")).map((l) => l.text);
    expect(warnings).toHaveLength(5);
    // Each says why, from the generated validator.
    expect(warnings[0]).toContain("(webviewIntent.text: expected a string)");
    expect(warnings[1]).toContain('(webviewIntent: missing "approvalId")');
    expect(warnings[2]).toContain("(webviewIntent.decision: expected one of");
    expect(warnings[3]).toContain('(webviewIntent: expected an object): "nonsense"');
    expect(warnings[4]).toContain("(webviewIntent.text: expected a string): [object Object]");
  });

  it("takes every intent the schema defines past the validator (dismissing the sandbox notice too)", async () => {
    const { view, incoming } = fakeView();
    __mock.state.webviewProviders.get("lovia.chat").resolveWebviewView(view);
    incoming.fire({ type: "ready" });
    incoming.fire({ type: "dismissSandboxNotice" });
    incoming.fire({ type: "scrolled", top: 10, atBottom: true });
    incoming.fire({ type: "send", text: "checked", mode: "prompt", context: [{ kind: "file", label: "a.ts", uri: "file:///work/project/a.ts" }] });
    await waitFor(() => server.requestsOf("lovia/run").length === 1);
    expect(__mock.state.outputLines.filter((l) => l.text.includes("malformed"))).toEqual([]);
  });

  it("coalesces a burst of streamed events into few posts", async () => {
    const { view, incoming, posted, rows } = fakeView();
    __mock.state.webviewProviders.get("lovia.chat").resolveWebviewView(view);
    incoming.fire({ type: "ready" });
    incoming.fire({ type: "send", text: "stream", mode: "prompt" });
    await waitFor(() => server.requestsOf("lovia/run").length === 1);
    const runId = [...server.runs.keys()][0]!;
    await waitFor(() => server.runs.get(runId)!.events.length >= 2);
    const before = posted.length;
    for (let i = 0; i < 200; i++) server.emit(runId, "message.delta", { messageId: "a", text: "x" });
    const answer = () => rows().find((r) => r.type === "assistant") as { text: string } | undefined;
    await waitFor(() => answer()?.text.length === 200, 3000, "all deltas");
    expect(posted.length - before).toBeLessThan(50);
    // Each streamed post is a small patch: the appended text, not the transcript.
    for (const m of posted.slice(before)) expect(JSON.stringify(m).length).toBeLessThan(1500);
  });
});

describe("status bar text", () => {
  it("describes server and run state", () => {
    expect(describeStatus("stopped", []).warning).toBe(true);
    expect(describeStatus("running", []).text).toBe("$(comment-discussion) lovia");
    const parent = createRunView("r_p", "s_p");
    parent.activity = "Wait for subagents";
    const counted = describeStatus("running", [parent], 2, true);
    expect(counted.text).toBe("$(bell-dot) lovia: a subagent is waiting for you · $(organization) 2");
    expect(counted.tooltip).toContain("2 subagents running");
    expect(counted.warning).toBe(true);
    const run = { activity: "Run npm test", prompt: "fix", todos: [{ content: "a", status: "completed" }, { content: "b", status: "pending" }] };
    expect(describeStatus("running", [run as never]).text).toBe("$(loading~spin) lovia: Run npm test · 1/2");
    const waiting = { ...run, activity: "waiting for approval", todos: [] };
    expect(describeStatus("running", [waiting as never, run as never])).toMatchObject({ text: "$(loading~spin) lovia: Run npm test · 1/2 (+1)" });
    expect(describeStatus("running", [run as never, waiting as never])).toMatchObject({ text: "$(bell-dot) lovia: waiting for approval (+1)", warning: true });
  });
});
