// Shared by the conformance scripts: one `lovia acp` process and a client app (the TypeScript
// SDK's `client()`) that records what the agent sends.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

export const argv = JSON.parse(process.env.LOVIA_ACP_CMD);
export const ws = process.env.LOVIA_ACP_WS;

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function until(predicate, what, ms = 90_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** One agent process and a client app recording what the agent sends. */
export function startAgent() {
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const raw = [];
  child.stdout.on("data", (chunk) => raw.push(chunk));
  const state = {
    child,
    raw,
    updates: [],
    permissions: [],
    answers: [],
    holdAnswers: false,
    buffers: new Map(),
    reads: [],
    writes: [],
  };
  const app = acp
    .client()
    .onNotification("session/update", ({ params }) => {
      state.updates.push(params);
    })
    .onRequest("session/request_permission", async ({ params }) => {
      state.permissions.push(params);
      await until(() => !state.holdAnswers && state.answers.length > 0, "a permission answer");
      const optionId = state.answers.shift();
      if (optionId === null) return { outcome: { outcome: "cancelled" } };
      assert.ok(params.options.some((o) => o.optionId === optionId), optionId);
      return { outcome: { outcome: "selected", optionId } };
    })
    .onRequest("fs/read_text_file", ({ params }) => {
      state.reads.push(params.path);
      if (state.buffers.has(params.path)) return { content: state.buffers.get(params.path) };
      return { content: readFileSync(params.path, "utf8") };
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      state.writes.push([params.path, params.content]);
      state.buffers.delete(params.path);
      writeFileSync(params.path, params.content);
      return {};
    });
  // the node tee above sees the bytes first; the SDK reads its own copy of the stream
  const input = Readable.toWeb(child.stdout);
  const output = Writable.toWeb(child.stdin);
  state.conn = app.connect(acp.ndJsonStream(output, input));
  state.agent = state.conn.agent;
  state.of = (sid, kind) =>
    state.updates
      .filter((n) => n.sessionId === sid && (!kind || n.update.sessionUpdate === kind))
      .map((n) => n.update);
  const exited = new Promise((resolve) => child.on("exit", resolve));
  state.kill = async () => {
    child.kill("SIGKILL");
    await exited;
    state.conn.close();
  };
  state.stop = async () => {
    child.stdin.end();
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("exit", resolve)));
    state.conn.close();
  };
  return state;
}

export function text(t) {
  return [{ type: "text", text: t }];
}

export function stdoutFrames(state) {
  const lines = Buffer.concat(state.raw).toString("utf8").split("\n");
  assert.equal(lines.pop(), "", "stdout ends mid-frame");
  return lines.map((line) => {
    const frame = JSON.parse(line);
    assert.equal(frame.jsonrpc, "2.0");
    return frame;
  });
}

