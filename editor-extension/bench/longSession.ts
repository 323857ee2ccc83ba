/**
 * A long coding session made of the events a real one has: for every tool call a `tool.call`
 * and a `tool.result` (reads with file text, searches with matches, shell commands with
 * streamed output, every 25th call an edit with its diff), an answer paragraph with a code
 * block every 10 calls, usage updates. Used by the webview benchmark and its screenshots.
 */
import { applyEvent, createRunView, type LoviaEvent, type RunView } from "../src/protocol";

const FILE = Array.from({ length: 40 }, (_, i) => `export function step${i}(input: number): number {\n  return input * ${i} + 1; // keep it simple\n}`).join("\n");

export interface Session {
  run: RunView;
  /** Apply one more event to the run (seq and envelope filled in). */
  emit(e: Record<string, unknown>): void;
}

export function longSession(toolCalls: number, runId = "run_long", sessionId = "ses_long"): Session {
  const run = createRunView(runId, sessionId);
  let seq = 0;
  const emit = (e: Record<string, unknown>) => applyEvent(run, { sessionId, runId, seq: ++seq, ts: 1_764_489_600_000 + seq * 50, ...e } as unknown as LoviaEvent);
  emit({ kind: "run.started", prompt: "Refactor the billing module and keep the tests green.", cwd: "/home/dev/shop", model: "openai:gpt-4.1-mini", agent: "coder", resumed: false });
  emit({ kind: "user.message", messageId: "u1", text: "Refactor the billing module and keep the tests green.", source: "prompt" });
  for (let i = 0; i < toolCalls; i++) {
    const id = `call_${i}`;
    const path = `/home/dev/shop/src/billing/part${i % 37}.ts`;
    const uri = `file://${path}`;
    if (i % 25 === 24) {
      emit({ kind: "tool.call", toolCallId: id, name: "edit_file", toolKind: "edit", title: `Edit src/billing/part${i % 37}.ts`, input: { path, old: "* 3 + 1", new: "* 3 + 2" }, locations: [{ path, uri }] });
      emit({ kind: "tool.result", toolCallId: id, status: "completed", isError: false, content: [{ type: "text", text: "Edited the file (+1 −1)." }, { type: "diff", path, uri, oldText: FILE, newText: FILE.replace("* 3 + 1", "* 3 + 2") }] });
    } else if (i % 3 === 0) {
      emit({ kind: "tool.call", toolCallId: id, name: "read_file", toolKind: "read", title: `Read src/billing/part${i % 37}.ts`, input: { path }, locations: [{ path, uri, line: 1 }] });
      emit({ kind: "tool.result", toolCallId: id, status: "completed", isError: false, content: [{ type: "text", text: FILE.split("\n").slice(0, 30).join("\n") }] });
    } else if (i % 3 === 1) {
      emit({ kind: "tool.call", toolCallId: id, name: "grep_files", toolKind: "search", title: `Search for "invoice${i}"`, input: { pattern: `invoice${i}` }, locations: [] });
      const matches = Array.from({ length: 8 }, (_, k) => `src/billing/part${(i + k) % 37}.ts:${k * 7 + 3}: const invoice${i} = computeInvoice(order, ${k});`).join("\n");
      emit({ kind: "tool.result", toolCallId: id, status: "completed", isError: false, content: [{ type: "text", text: matches }] });
    } else {
      emit({ kind: "tool.call", toolCallId: id, name: "shell", toolKind: "execute", title: "Run npm test", input: { command: "npm test -- billing" }, locations: [] });
      for (let k = 0; k < 3; k++) emit({ kind: "tool.update", toolCallId: id, output: { stream: k === 2 ? "stderr" : "stdout", text: `✔ billing case ${i}.${k} passes (${k + 3} ms)\n` } });
      emit({ kind: "tool.result", toolCallId: id, status: "completed", isError: false, content: [{ type: "text", text: "exit code: 0\n✔ 42 tests passed" }] });
    }
    if (i % 10 === 9) {
      const text = `Step ${i + 1}: moved the invoice rounding into \`roundCents()\` and updated **part${i % 37}.ts**.\n\n\`\`\`ts\nexport function roundCents(x: number): number {\n  return Math.round(x * 100) / 100;\n}\n\`\`\`\n\nNext I will run the billing tests again.`;
      emit({ kind: "message.completed", messageId: `m${i}`, text });
      emit({ kind: "usage.updated", inputTokens: 1000 * i, outputTokens: 50 * i, cacheReadTokens: 0, contextTokens: 20_000 + i * 10, contextWindow: 128_000 });
    }
  }
  return { run, emit };
}
