import { execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import { __mock } from "../vscode-mock/vscode";
import { CloseAction, LanguageClient as FakeClient } from "../support/fakeLanguageClient";
import { makeContext } from "./helpers";
import type { ServerBootstrap } from "../../src/server/bootstrap";

vi.mock("vscode-languageclient/node", () => import("../support/fakeLanguageClient"));

const { ServerHost } = await import("../../src/server/serverHost");

/** A real interpreter without lovia: a fresh venv with nothing installed. */
function bareVenvPython(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "lovia-bare-")), "venv");
  execFileSync("python3", ["-m", "venv", "--without-pip", dir]);
  return join(dir, "bin", "python");
}

beforeEach(() => {
  __mock.reset();
  FakeClient.instances = [];
});

describe("ServerHost start-up failures", () => {
  it("a server that dies on an import error is reported once with a fix and not restarted", async () => {
    const python = bareVenvPython();
    __mock.state.workspaceFolders = [{ uri: vscode.Uri.file(tmpdir()), name: "tmp", index: 0 }];
    const bootstrap = { resolve: () => Promise.resolve({ command: python, source: "setting" }) } as unknown as ServerBootstrap;
    const log = vscode.window.createOutputChannel("lovia", { log: true }) as unknown as vscode.LogOutputChannel;
    const host = new ServerHost(makeContext(), log, bootstrap);
    const client = FakeClient.instances.at(-1)!;
    const child = (await (client.serverOptions as () => Promise<ChildProcess>)()) as ChildProcess;
    await new Promise<void>((resolve) => child.once("close", () => resolve()));
    const closed = client.clientOptions.errorHandler.closed as () => { action: CloseAction };
    expect(closed().action).toBe(CloseAction.DoNotRestart);
    expect(closed().action).toBe(CloseAction.DoNotRestart);
    const errors = __mock.state.messages.filter((m) => m.level === "error");
    expect(errors).toHaveLength(1);
    expect(errors[0]!.text).toContain("No module named lovia_server");
    expect(errors[0]!.items).toEqual(["Install lovia", "Open Settings", "Open Log"]);
    expect(__mock.state.messages.filter((m) => m.text.includes("restarting"))).toHaveLength(0);
    expect(host.state).toBe("stopped");
    host.dispose();
  }, 60_000);

  it("a server that crashed after it answered is still restarted", async () => {
    const bootstrap = { resolve: () => Promise.resolve({ command: "python3", source: "path" }) } as unknown as ServerBootstrap;
    const log = vscode.window.createOutputChannel("lovia", { log: true }) as unknown as vscode.LogOutputChannel;
    const host = new ServerHost(makeContext(), log, bootstrap);
    const client = FakeClient.instances.at(-1)!;
    const closed = client.clientOptions.errorHandler.closed as () => { action: CloseAction };
    expect(closed().action).toBe(CloseAction.Restart);
    expect(__mock.state.messages.filter((m) => m.level === "warning")[0]!.text).toContain("restarting (1/4)");
    host.dispose();
  });
});
