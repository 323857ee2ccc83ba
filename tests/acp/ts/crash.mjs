// SIGKILL `lovia acp` while an edit waits for approval; a new process resumes the session to
// completion (the TypeScript SDK's client side). Run by tests/acp/test_ts_client.py.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { startAgent, stdoutFrames, text, until, ws } from "./client.mjs";

const init = { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} };

const first = startAgent();
await first.agent.request("initialize", init);
const { sessionId: sid } = await first.agent.request("session/new", { cwd: ws, mcpServers: [] });
first.holdAnswers = true;
const turn = first.agent.request("session/prompt", { sessionId: sid, prompt: text("change one to two") });
turn.catch(() => {}); // the process dies under it
await until(() => first.permissions.length === 1, "the edit's approval");
await first.kill();
assert.equal(readFileSync(join(ws, "a.txt"), "utf8"), "one\n");

const second = startAgent();
await second.agent.request("initialize", init);
second.answers.push("allow_once"); // the pending approval is asked again
await second.agent.request("session/load", { sessionId: sid, cwd: ws, mcpServers: [] });
const end = await until(
  () => second.of(sid, "session_info_update").find((u) => u._meta?.lovia?.status !== "running"),
  "the resumed run to finish",
);
assert.equal(end._meta.lovia.status, "completed");
assert.equal(second.permissions.length, 1);
assert.equal(second.permissions[0].toolCall.toolCallId, "e1");
assert.equal(readFileSync(join(ws, "a.txt"), "utf8"), "two\n");
const said = second.of(sid, "agent_message_chunk").map((u) => u.content.text).join("");
assert.ok(said.endsWith("Changed one to two."), said);
assert.deepEqual(second.of(sid, "user_message_chunk").map((u) => u.content.text), ["change one to two"]);
await second.stop();
stdoutFrames(second);
console.log(JSON.stringify({ ok: true, sessionId: sid }));
// a connection the killed process left behind must not keep node waiting
process.exit(0);
