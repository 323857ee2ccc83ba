// The TypeScript ACP SDK (@agentclientprotocol/sdk) as a second, independent client of `lovia acp`.
//
// Run by tests/acp/test_ts_client.py, which starts the fake model server, scripts its replies in
// the order this script's prompts consume them, and checks the model requests afterwards.
//   LOVIA_ACP_CMD   JSON argv of the agent (python -m lovia_server.acp --state-dir ...)
//   LOVIA_ACP_WS    the workspace folder
// Prints one JSON line {"ok": true, ...} at the end; any failed assertion exits non-zero.

import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { sleep, startAgent, stdoutFrames, text, until, ws } from "./client.mjs";

const prompts = [];
async function prompt(state, sid, t) {
  prompts.push(t);
  return state.agent.request("session/prompt", { sessionId: sid, prompt: text(t) });
}

// ------------------------------------------------------------------------------ one process

const first = startAgent();
const init = await first.agent.request("initialize", {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
  clientInfo: { name: "ts-conformance", version: "1" },
});
assert.equal(init.protocolVersion, 1);
assert.equal(init.agentCapabilities.loadSession, true);
assert.equal(init.agentInfo.name, "lovia");

const created = await first.agent.request("session/new", { cwd: ws, mcpServers: [] });
const sid = created.sessionId;
assert.equal(created.modes.currentModeId, "coding");

// tool calls with diffs, allow_once then reject_once, plan updates
first.answers.push("allow_once", "reject_once");
let done = await prompt(first, sid, "tidy up");
assert.equal(done.stopReason, "end_turn");
const [editAsk, writeAsk] = first.permissions;
assert.equal(editAsk.toolCall.toolCallId, "e1");
assert.equal(writeAsk.toolCall.toolCallId, "w1");
assert.deepEqual(editAsk.toolCall.content[0], {
  type: "diff",
  path: join(ws, "a.txt"),
  oldText: "one\ntwo\n",
  newText: "uno\ntwo\n",
});
assert.deepEqual(
  editAsk.options.map((o) => o.kind).sort(),
  ["allow_always", "allow_once", "reject_always", "reject_once"],
);
assert.equal(readFileSync(join(ws, "a.txt"), "utf8"), "uno\ntwo\n");
assert.equal(existsSync(join(ws, "b.txt")), false);
const started = Object.fromEntries(first.of(sid, "tool_call").map((u) => [u.toolCallId, u]));
assert.equal(started.e1.kind, "edit");
assert.deepEqual(started.e1.rawInput, { path: "a.txt", old: "one", new: "uno" });
const finals = {};
for (const u of first.of(sid, "tool_call_update")) {
  if (u.status === "completed" || u.status === "failed") finals[u.toolCallId] = u;
}
assert.equal(finals.e1.status, "completed");
assert.ok(finals.e1.content.some((c) => c.type === "diff" && c.newText === "uno\ntwo\n"));
assert.equal(finals.w1.status, "failed");
const plans = first.of(sid, "plan").map((p) => p.entries.map((e) => [e.content, e.status]));
assert.deepEqual(plans, [
  [["Edit a.txt", "in_progress"], ["Write b.txt", "pending"]],
  [["Edit a.txt", "completed"], ["Write b.txt", "completed"]],
]);

// fs/read_text_file serves an unsaved buffer; fs/write_text_file receives the edit
const notes = join(ws, "notes.md");
first.buffers.set(notes, "unsaved in the editor\n");
first.answers.push("allow_once");
done = await prompt(first, sid, "edit the notes");
assert.equal(done.stopReason, "end_turn");
assert.ok(first.reads.includes(notes));
assert.deepEqual(first.writes, [
  [join(ws, "a.txt"), "uno\ntwo\n"],
  [notes, "edited in the editor\n"],
]);
assert.equal(first.permissions[2].toolCall.content[0].oldText, "unsaved in the editor\n");

// set_config_option switches the model
const switched = await first.agent.request("session/set_config_option", {
  sessionId: sid,
  configId: "model",
  value: "openai:model-b",
});
assert.equal(switched.configOptions.find((o) => o.id === "model").currentValue, "openai:model-b");
done = await prompt(first, sid, "one more");
assert.equal(done.stopReason, "end_turn");

// a second prompt during a turn becomes a steer
first.holdAnswers = true;
first.answers.push("allow_once");
const turn = prompt(first, sid, "format the code");
await until(() => first.permissions.length === 4, "the command's approval");
const steer = prompt(first, sid, "use tabs, not spaces");
await sleep(300);
first.holdAnswers = false;
const [one, two] = await Promise.all([turn, steer]);
assert.equal(one.stopReason, "end_turn");
assert.equal(two.stopReason, "end_turn");
assert.deepEqual(
  first.of(sid, "user_message_chunk").map((u) => u.content.text),
  ["use tabs, not spaces"],
);

// set_mode readonly while a write waits for approval: the ACL refuses the write
first.holdAnswers = true;
first.answers.push("allow_once");
const writeTurn = prompt(first, sid, "write x");
await until(() => first.permissions.length === 5, "the write's approval");
await first.agent.request("session/set_mode", { sessionId: sid, modeId: "readonly" });
first.holdAnswers = false;
assert.equal((await writeTurn).stopReason, "end_turn");
const refused = first.of(sid, "tool_call_update").filter((u) => u.toolCallId === "x1").pop();
assert.equal(refused.status, "failed");
assert.match(refused.rawOutput.output, /policy denies writing/);
assert.equal(existsSync(join(ws, "x.txt")), false);
await first.agent.request("session/set_mode", { sessionId: sid, modeId: "coding" });

// cancel mid-tool: the prompt ends `cancelled`
first.answers.push("allow_once");
const long = prompt(first, sid, "run it");
await until(
  () => first.of(sid, "tool_call_update").some((u) => u.toolCallId === "s2" && u.status === "in_progress"),
  "the command to run",
);
await first.agent.notify("session/cancel", { sessionId: sid });
assert.equal((await long).stopReason, "cancelled");

const streamed = first.of(sid);
await first.stop();
stdoutFrames(first);

// ------------------------------------------------------------------------------ session/load

const second = startAgent();
await second.agent.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
const listed = await second.agent.request("session/list", { cwd: ws });
assert.deepEqual(listed.sessions.map((s) => s.sessionId), [sid]);
await second.agent.request("session/load", { sessionId: sid, cwd: ws, mcpServers: [] });
const replayed = second.of(sid);
const notUser = (u) => u.sessionUpdate !== "user_message_chunk";
// the session's commands are announced on every session/new and load, not replayed history
const history = (u) => notUser(u) && u.sessionUpdate !== "available_commands_update";
assert.deepEqual(replayed.filter(history), streamed.filter(history));
const said = replayed.filter((u) => !notUser(u)).map((u) => u.content.text);
assert.deepEqual(said, prompts);
await second.stop();
stdoutFrames(second);

console.log(JSON.stringify({ ok: true, sessionId: sid, updates: streamed.length, replayed: replayed.length }));
// a connection the killed process left behind must not keep node waiting
process.exit(0);
