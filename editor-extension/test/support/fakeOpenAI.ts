/**
 * A scripted OpenAI-compatible model on 127.0.0.1 for tests that run the real server with its
 * built-in agent: `POST /v1/chat/completions` streams the next scripted turn (tool calls or
 * text) as `chat.completion.chunk` SSE frames, and every request body is kept, so a test can
 * check what reached the model's input.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Turn = { text: string } | { calls: { id: string; name: string; args: Record<string, unknown> }[] };

export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1`, for OPENAI_BASE_URL. */
  baseUrl: string;
  /** Chat request bodies, in order. */
  requests: unknown[];
  close(): Promise<void>;
}

function chunk(delta: Record<string, unknown> | null, extra: Record<string, unknown> = {}): string {
  const payload = {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "fake-model",
    choices: delta === null ? [] : [{ index: 0, delta, logprobs: null, finish_reason: extra.finish_reason ?? null }],
    ...(extra.usage ? { usage: extra.usage } : {}),
  };
  return `data: ${JSON.stringify(payload)}\n\n`;
}

function frames(turn: Turn): string[] {
  const out = [chunk({ role: "assistant", content: "text" in turn ? "" : null })];
  if ("text" in turn) {
    out.push(chunk({ content: turn.text }), chunk({}, { finish_reason: "stop" }));
  } else {
    turn.calls.forEach((c, index) => {
      out.push(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }] }));
    });
    out.push(chunk({}, { finish_reason: "tool_calls" }));
  }
  out.push(chunk(null, { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }), "data: [DONE]\n\n");
  return out;
}

export async function startFakeOpenAI(script: Turn[]): Promise<FakeOpenAI> {
  const queue = [...script];
  const requests: unknown[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found", type: "invalid_request_error" } }));
        return;
      }
      requests.push(JSON.parse(body) as unknown);
      const turn = queue.shift() ?? { text: "(the script ran out)" };
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const f of frames(turn)) res.write(f);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
