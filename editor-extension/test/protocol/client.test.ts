import { afterEach, describe, expect, it } from "vitest";
import {
  ErrorCodes,
  LoviaClient,
  LoviaRequestError,
  isRequestError,
  type LoviaEvent,
} from "../../src/protocol";
import { FakeLoviaServer, waitFor } from "../support/fakeServer";
import { ResponseError } from "vscode-jsonrpc/node";

describe("LoviaClient over a real vscode-jsonrpc connection", () => {
  let server: FakeLoviaServer;
  let client: LoviaClient;

  afterEach(() => {
    client?.dispose();
    server?.detachAll();
  });

  function setup(): void {
    server = new FakeLoviaServer();
    client = new LoviaClient(server.attach());
  }

  it("sends typed requests with the protocol's params and returns results", async () => {
    setup();
    const run = await client.run({ prompt: "hello", cwd: "/work/project" });
    expect(run).toMatchObject({ status: "running" });
    expect(run.runId).toMatch(/^run_/);
    expect(server.requestsOf("lovia/run")).toEqual([{ prompt: "hello", cwd: "/work/project" }]);

    const steer = await client.steer({ runId: run.runId, message: "also add tests" });
    expect(steer).toMatchObject({ runId: run.runId, accepted: true });
    expect(await client.unsteer({ runId: run.runId, messageId: steer.messageId })).toEqual({ withdrawn: true });
    expect(await client.unsteer({ runId: run.runId, messageId: steer.messageId })).toEqual({ withdrawn: false });

    const cancel = await client.cancel({ runId: run.runId });
    expect(cancel).toEqual({ runId: run.runId, status: "cancelling" });
    const status = await client.status();
    expect(status.version).toBe("fake");
    expect(server.requestsOf("lovia/status")).toEqual([{}]);
  });

  it("delivers lovia/event notifications to listeners and ignores malformed ones", async () => {
    setup();
    const seen: LoviaEvent[] = [];
    client.onEvent((e) => seen.push(e));
    const run = await client.run({ prompt: "hi" });
    await waitFor(() => seen.length === 2, 2000, "two events");
    expect(seen.map((e) => [e.kind, e.seq])).toEqual([
      ["run.started", 1],
      ["user.message", 2],
    ]);
    expect(seen[0]!.runId).toBe(run.runId);

    // A notification without runId/seq is not an event.
    const conn = server.attach();
    const second = new LoviaClient(conn);
    let count = 0;
    second.onEvent(() => count++);
    server["connections"].forEach((c) => void c.sendNotification("lovia/event", { kind: "message.delta", text: "x" }));
    await waitFor(() => second.malformedEvents === 1, 2000, "malformed counted");
    expect(count).toBe(0);
    second.dispose();
  });

  it("maps JSON-RPC errors to LoviaRequestError with the protocol name, data and hint", async () => {
    setup();
    server.overrides.set("lovia/run", () => {
      throw new ResponseError(-32016, "No model configured", { hint: "Set lovia.model or LOVIA_MODEL" });
    });
    const err = await client.run({ prompt: "x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LoviaRequestError);
    const e = err as LoviaRequestError;
    expect(e.code).toBe(ErrorCodes.ModelNotConfigured);
    expect(e.codeName).toBe("ModelNotConfigured");
    expect(e.hint).toBe("Set lovia.model or LOVIA_MODEL");
    expect(e.method).toBe("lovia/run");
    expect(isRequestError(e, ErrorCodes.ModelNotConfigured)).toBe(true);
    expect(isRequestError(e, ErrorCodes.RunNotFound)).toBe(false);

    const notFound = await client.replay({ runId: "nope" }).catch((x: unknown) => x);
    expect(isRequestError(notFound, ErrorCodes.RunNotFound)).toBe(true);
    expect((notFound as LoviaRequestError).codeName).toBe("RunNotFound");
  });

  it("stops delivering events after dispose", async () => {
    setup();
    const seen: LoviaEvent[] = [];
    const sub = client.onEvent((e) => seen.push(e));
    const run = server.startRun("direct");
    server.emit(run.runId, "run.started", { prompt: "direct", cwd: "/", model: null, agent: "lovia:coding", resumed: false });
    await waitFor(() => seen.length === 1);
    sub.dispose();
    server.emit(run.runId, "user.message", { messageId: "m", text: "direct", source: "prompt" });
    await new Promise((r) => setTimeout(r, 30));
    expect(seen).toHaveLength(1);
  });
});
