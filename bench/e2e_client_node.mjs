// The Node client of bench/e2e_clients.py: vscode-jsonrpc, the library under the extension's
// LanguageClient, reading the lovia server's stdout with its own StreamMessageReader.
//
// Environment: LOVIA_BENCH_SERVER (JSON argv of the server), LOVIA_BENCH_ROOT (workspace),
// LOVIA_BENCH_INIT (JSON initializationOptions.lovia), LOVIA_BENCH_SETTINGS (JSON `lovia`
// section), LOVIA_BENCH_PROMPTS (JSON list), LOVIA_BENCH_OUT (result file).
// Arrival stamps: process.hrtime.bigint() is libuv's uv_hrtime, clock_gettime(CLOCK_MONOTONIC)
// on Linux: the clock of Python's time.monotonic_ns() in the fake model server.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(new URL("../editor-extension/package.json", import.meta.url));
const rpc = require("vscode-jsonrpc/node");

const argv = JSON.parse(process.env.LOVIA_BENCH_SERVER);
const root = process.env.LOVIA_BENCH_ROOT;
const settings = JSON.parse(process.env.LOVIA_BENCH_SETTINGS);
const prompts = JSON.parse(process.env.LOVIA_BENCH_PROMPTS);
const clockAtStart = Number(process.hrtime.bigint());

const server = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(server.stdout),
  new rpc.StreamMessageWriter(server.stdin),
);

let current = null;
connection.onNotification("lovia/event", (event) => {
  const arrival = Number(process.hrtime.bigint());
  if (current === null) return;
  if (event.kind === "message.delta") {
    current.deltas.push([event.text, arrival]);
  } else if (event.kind === "run.finished") {
    current.status = event.status;
    current.finished();
  }
});
connection.onRequest("workspace/configuration", (params) =>
  params.items.map((item) => (item.section === "lovia" ? settings : null)),
);
connection.listen();

const rootUri = pathToFileURL(root).href;
await connection.sendRequest("initialize", {
  processId: process.pid,
  rootUri,
  workspaceFolders: [{ uri: rootUri, name: "ws" }],
  capabilities: { workspace: { configuration: true } },
  initializationOptions: { lovia: JSON.parse(process.env.LOVIA_BENCH_INIT) },
});
await connection.sendNotification("initialized", {});

const runs = [];
for (const prompt of prompts) {
  const run = { prompt, deltas: [], status: "" };
  const done = new Promise((resolve) => {
    run.finished = resolve;
  });
  current = run;
  await connection.sendRequest("lovia/run", { prompt });
  await done;
  current = null;
  delete run.finished;
  runs.push(run);
}
await connection.sendRequest("shutdown", null);
await connection.sendNotification("exit", null);
writeFileSync(process.env.LOVIA_BENCH_OUT, JSON.stringify({ clockAtStart, runs }));
await new Promise((resolve) => server.on("exit", resolve));
connection.dispose();
