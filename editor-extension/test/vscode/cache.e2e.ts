/**
 * Cache health in a real VS Code (code-server): the built-in coding agent runs against a local
 * server speaking Anthropic's wire format (tests/support/fake_anthropic.py) whose usage reports
 * cache reads, and the panel's usage line shows the cached share of the input and the cost at
 * Anthropic's cache prices.
 */
import { afterEach, expect, test } from "vitest";
import { repoPython, startFakeProvider, VsCodeWindow } from "./harness";

let win: VsCodeWindow | undefined;
let stopFake: (() => void) | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  stopFake?.();
  stopFake = undefined;
  failed = true;
});

// Every request is answered with text whose usage says 1,800 of its 2,000 prompt tokens were
// read from the prompt cache (Anthropic's message_start.usage, as the real API sends it).
const FAKE = `
import time
from tests.support import fake_anthropic as ant

def reply(request):
    return ant.text("Served mostly from the cache.", usage=ant.usage(input=200, output=12, cache_read=1800))

server = ant.FakeAnthropic(responder=reply)
server.models = [{"id": "claude-sonnet-4-5", "max_input_tokens": 200000}]
server.start()
print(server.base_url, flush=True)
while True:
    time.sleep(3600)
`;

test("a run against Anthropic shows the cached share of its input and its cost in the usage line", async () => {
  const fake = await startFakeProvider(FAKE, "Anthropic");
  stopFake = fake.stop;
  const baseUrl = fake.baseUrl;
  win = new VsCodeWindow({
    scenario: "12-cache-health",
    files: { "README.md": "# cache project\n" },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: { "lovia.model": "anthropic:claude-sonnet-4-5" },
    env: { ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: "test-key" },
  });
  win.installExtension();
  await win.start();
  const view = await win.openPanel();
  await view.locator("button.send:not([disabled])").waitFor({ timeout: 90_000 });
  await view.locator("textarea.composer-input").fill("Say something.");
  await view.locator("textarea.composer-input").press("Enter");
  await view.locator("article.msg-assistant", { hasText: "Served mostly from the cache." }).waitFor({ timeout: 90_000 });
  const usage = view.locator(".usage-text");
  // 1,800 of 2,000 input tokens from the cache; $3 per million plain, $0.30 read, $15 out.
  await expect.poll(() => usage.textContent(), { timeout: 30_000 }).toContain("90% cached · $0.0013");
  expect(await usage.textContent()).toContain("2.0k / 200k context");
  expect(await view.locator(".usage").getAttribute("title")).toContain("1800 read from the prompt cache, 0 written to it · last turn 90% cached");
  await win.shot("usage-line-cached-share");
  failed = false;
});
