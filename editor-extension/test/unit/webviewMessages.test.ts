import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkWebviewIntent, isWebviewIntent, type Mention, type WebviewIntent } from "../../src/chat/messages";

const schema = JSON.parse(readFileSync(new URL("../../src/chat/messages.schema.json", import.meta.url), "utf8")) as {
  $defs: { WebviewIntent: { oneOf: { properties: { type: { const: string } } }[] } };
};
const SCHEMA_TYPES = schema.$defs.WebviewIntent.oneOf.map((b) => b.properties.type.const);

const mention: Mention = { kind: "selection", label: "selection", detail: "a.ts:1-2", uri: "file:///w/a.ts", range: { start: { line: 0, character: 0 }, end: { line: 1, character: 4 } } };

/** One valid message of every kind the webview posts, with every optional field somewhere. */
const VALID: WebviewIntent[] = [
  { type: "ready" },
  { type: "send", text: "hi", mode: "prompt", context: [mention, { kind: "file", label: "a.ts", uri: "file:///w/a.ts" }] },
  { type: "send", text: "faster", mode: "steer" },
  { type: "mentionQuery", query: "sel", requestId: 3 },
  { type: "commandQuery", requestId: 4 },
  { type: "newWorktreeAgent", text: "try it another way", context: [mention] },
  { type: "newWorktreeAgent", text: "and another" },
  { type: "unsteer", runId: "r1", messageId: "m1" },
  { type: "cancel" },
  { type: "cancel", runId: "r_child" },
  { type: "steerRun", runId: "r_child", text: "stop that" },
  { type: "approve", runId: "r1", approvalId: "a1", decision: "allow_once", edits: [{ path: "a.ts", newText: "x\n" }] },
  { type: "approve", runId: "r1", approvalId: "a1", decision: "reject_always", message: "not there" },
  { type: "openDiff", runId: "r1", approvalId: "a1" },
  { type: "openChange", runId: "r1", path: "src/a.ts" },
  { type: "copy", text: "code" },
  { type: "insertCode", text: "code", language: "ts" },
  { type: "answer", runId: "r1", questionId: "q1", answer: "yes" },
  { type: "openLocation", uri: "file:///w/a.ts" },
  { type: "openLocation", uri: "file:///w/a.ts", line: 12 },
  { type: "selectSession", sessionId: "s1" },
  { type: "newSession" },
  { type: "resume", runId: "r1" },
  { type: "refreshSessions" },
  { type: "deleteSession", sessionId: "s1" },
  { type: "dismissError" },
  { type: "dismissSandboxNotice" },
  { type: "setApiKey" },
  { type: "chooseModel" },
  { type: "useDemo" },
  { type: "scrolled", top: 120.5, atBottom: false },
  { type: "restoreCheckpoint", runId: "r1", checkpointId: "c1" },
  { type: "compareCheckpoint", runId: "r1", checkpointId: "c1" },
];

describe("the generated webview message validator", () => {
  it("accepts a well-formed message of every kind the schema defines", () => {
    expect(new Set(VALID.map((m) => m.type))).toEqual(new Set(SCHEMA_TYPES));
    for (const message of VALID) expect(checkWebviewIntent(message), JSON.stringify(message)).toBeUndefined();
  });

  it("takes an optional field set to undefined as absent (postMessage keeps such keys)", () => {
    expect(checkWebviewIntent({ type: "cancel", runId: undefined })).toBeUndefined();
    expect(checkWebviewIntent({ type: "send", text: "x", mode: "prompt", context: undefined })).toBeUndefined();
  });

  it("rejects anything else with the first problem and where it is", () => {
    const cases: [unknown, string][] = [
      ["nonsense", "webviewIntent: expected an object"],
      [null, "webviewIntent: expected an object"],
      [[{ type: "ready" }], "webviewIntent: expected an object"],
      [{}, "webviewIntent: unknown type undefined"],
      [{ type: "rm -rf" }, 'webviewIntent: unknown type "rm -rf"'],
      [{ type: "send", text: 42, mode: "prompt" }, "webviewIntent.text: expected a string"],
      [{ type: "send", text: "x" }, 'webviewIntent: missing "mode"'],
      [{ type: "send", text: "x", mode: "shout" }, 'webviewIntent.mode: expected one of "prompt", "steer"'],
      [{ type: "send", text: "x", mode: "prompt", context: {} }, "webviewIntent.context: expected an array"],
      [{ type: "send", text: "x", mode: "prompt", context: [{ ...mention, kind: "url" }] }, 'webviewIntent.context[0].kind: expected one of "file", "folder", "symbol", "selection", "problems"'],
      [{ type: "send", text: "x", mode: "prompt", context: [{ kind: "file", label: "a" }] }, 'webviewIntent.context[0]: missing "uri"'],
      [{ type: "send", text: "x", mode: "prompt", context: [{ ...mention, range: { start: { line: -1 }, end: {} } }] }, "webviewIntent.context[0].range.start.line: expected at least 0"],
      [{ type: "send", text: "x", mode: "prompt", context: [{ ...mention, problems: [] }] }, 'webviewIntent.context[0]: unexpected property "problems"'],
      [{ type: "approve", runId: "r" }, 'webviewIntent: missing "approvalId"'],
      [{ type: "approve", runId: "r", approvalId: "a", decision: "allow" }, 'webviewIntent.decision: expected one of "allow_once", "allow_always", "reject_once", "reject_always"'],
      [{ type: "approve", runId: "r", approvalId: "a", decision: "allow_once", edits: [{ path: "a", newText: 1 }] }, "webviewIntent.edits[0].newText: expected a string"],
      [{ type: "approve", runId: "r", approvalId: "a", decision: "allow_once", edits: [{ path: "", newText: "" }] }, "webviewIntent.edits[0].path: expected at least 1 character"],
      [{ type: "mentionQuery", query: "a", requestId: 1.5 }, "webviewIntent.requestId: expected an integer"],
      [{ type: "scrolled", top: Number.NaN, atBottom: true }, "webviewIntent.top: expected a finite number"],
      [{ type: "scrolled", top: 1, atBottom: "yes" }, "webviewIntent.atBottom: expected a boolean"],
      [{ type: "cancel", runId: 3 }, "webviewIntent.runId: expected a string"],
      [{ type: "ready", extra: true }, 'webviewIntent: unexpected property "extra"'],
    ];
    for (const [value, problem] of cases) {
      expect(checkWebviewIntent(value), JSON.stringify(value)).toBe(problem);
      expect(isWebviewIntent(value)).toBe(false);
    }
  });
});
