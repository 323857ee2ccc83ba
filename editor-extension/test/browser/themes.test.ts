/**
 * Code blocks and contrast in the three theme kinds VS Code has (Dark Modern, Light Modern,
 * High Contrast): highlighting loads lazily under the CSP, every code block has Copy (answers
 * also Insert), and text, code and token colours keep a readable contrast on what they sit on.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResetMessage } from "../../src/chat/messages";
import { ViewSync } from "../../src/chat/viewSync";
import { applyEvent, createRunView, type LoviaEvent } from "../../src/protocol";
import { longSession } from "../../bench/longSession";
import { artifacts, openWebview, type Theme, type WebviewPage } from "./page";

let web: WebviewPage;

const ANSWER = [
  "Use `roundCents()` from **money.ts**:",
  "",
  "```ts",
  "// Round to whole cents.",
  'export function roundCents(x: number, label = "total"): number {',
  "  const factor = 100;",
  "  return Math.round(x * factor) / factor;",
  "}",
  "```",
  "",
  "Then run:",
  "",
  "```",
  "npm test",
  "```",
].join("\n");

function session(): ResetMessage {
  const run = createRunView("run_code", "ses_code");
  const ev = (seq: number, e: Record<string, unknown>) => applyEvent(run, { sessionId: "ses_code", runId: "run_code", seq, ts: seq, ...e } as unknown as LoviaEvent);
  ev(1, { kind: "run.started", prompt: "round", cwd: "/w", model: "m", agent: "a", resumed: false });
  ev(2, { kind: "user.message", messageId: "u1", text: "How do I round to cents?", source: "prompt" });
  ev(3, { kind: "tool.call", toolCallId: "r1", name: "read_file", toolKind: "read", title: "Read src/money.ts", input: { path: "src/money.ts" }, locations: [] });
  ev(4, { kind: "tool.result", toolCallId: "r1", status: "completed", isError: false, content: [{ type: "text", text: "export const x = 1;" }] });
  ev(5, { kind: "message.completed", messageId: "a1", text: ANSWER });
  ev(6, { kind: "run.finished", status: "completed", resumable: false, usage: { inputTokens: 1, outputTokens: 1 } });
  return new ViewSync().next({
    server: { state: "running" },
    trusted: true,
    sessions: [],
    sessionId: "ses_code",
    sessionTitle: "Rounding",
    runs: [run],
    childRuns: [],
    pendingSteers: [],
    busy: false,
    model: { kind: "setting", label: "openai:gpt-4.1-mini" },
  }) as ResetMessage;
}

/** WCAG contrast of each probed element's text against what it is drawn on. */
async function contrasts(): Promise<Record<string, number>> {
  return web.page.evaluate(() => {
    type RGBA = [number, number, number, number];
    const parse = (c: string): RGBA => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return [0, 0, 0, 0];
      const p = m[1]!.split(/[ ,/]+/).filter(Boolean).map(Number);
      return [p[0]!, p[1]!, p[2]!, p[3] ?? 1];
    };
    const over = (top: RGBA, under: RGBA): RGBA => {
      const a = top[3] + under[3] * (1 - top[3]);
      if (a === 0) return [0, 0, 0, 0];
      const mix = (i: number) => (top[i]! * top[3] + under[i]! * under[3] * (1 - top[3])) / a;
      return [mix(0), mix(1), mix(2), a];
    };
    const background = (el: Element): RGBA => {
      const chain: Element[] = [];
      for (let e: Element | null = el; e; e = e.parentElement) chain.push(e);
      let bg: RGBA = [255, 255, 255, 1];
      for (const e of chain.reverse()) bg = over(parse(getComputedStyle(e).backgroundColor), bg);
      return bg;
    };
    const lum = ([r, g, b]: RGBA) => {
      const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const ratio = (a: RGBA, b: RGBA) => {
      const [x, y] = [lum(a), lum(b)].sort((m, n) => n - m);
      return (x! + 0.05) / (y! + 0.05);
    };
    const out: Record<string, number> = {};
    const probe = (name: string, selector: string) => {
      document.querySelectorAll(selector).forEach((el, i) => {
        const bg = background(el);
        const fg = over(parse(getComputedStyle(el).color), bg);
        out[`${name}${i ? `#${i}` : ""}`] = Math.round(ratio(fg, bg) * 100) / 100;
      });
    };
    probe("answer text", ".msg-assistant .markdown > p");
    probe("inline code", ".msg-assistant p code");
    probe("code", ".code-block pre code");
    probe("token", ".code-block [class^='hljs-']");
    probe("code language", ".code-lang");
    probe("code button", ".code-button");
    probe("user message", ".msg-user .msg-text");
    probe("tool title", ".tool-row .tool-title");
    probe("tool meta", ".tool-row .tool-meta");
    probe("session name", ".session-name");
    probe("send button", "button.send");
    // The code block's edge against the side bar: its border, or its own background.
    const block = document.querySelector(".code-block")!;
    const side = background(document.body);
    const edge = Math.max(ratio(over(parse(getComputedStyle(block).borderTopColor), side), side), ratio(background(block), side));
    out["code block edge"] = Math.round(edge * 100) / 100;
    const inline = document.querySelector(".msg-assistant p code")!;
    out["inline code edge"] = Math.round(Math.max(ratio(background(inline), background(inline.parentElement!)), ratio(over(parse(getComputedStyle(inline).borderTopColor), side), side)) * 100) / 100;
    return out;
  });
}

beforeAll(async () => {
  web = await openWebview({ width: 440, height: 700 });
});

afterAll(async () => {
  await web?.close();
});

describe("code blocks and contrast", () => {
  for (const theme of ["dark", "light", "high-contrast"] as Theme[]) {
    it(`reads well in ${theme}: text, code and tokens ≥ 4.5:1, code blocks framed`, async () => {
      await web.load(theme);
      expect(await web.page.evaluate(() => (window as { loviaHighlighter?: unknown }).loviaHighlighter)).toBeUndefined();
      await web.post(session());
      await web.page.waitForSelector(".code-block code.hljs", { timeout: 10_000 });
      const c = await contrasts();
      for (const [name, value] of Object.entries(c)) {
        if (name.endsWith("edge")) continue;
        expect.soft(value, `${theme}: ${name}`).toBeGreaterThanOrEqual(4.5);
      }
      expect(c["code block edge"], `${theme}: code block edge`).toBeGreaterThanOrEqual(1.4);
      expect(c["inline code edge"], `${theme}: inline code edge`).toBeGreaterThanOrEqual(1.1);
      expect(Object.keys(c).filter((k) => k.startsWith("token")).length).toBeGreaterThan(3);
      expect(await web.page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual([]);
      await web.page.screenshot({ path: `${artifacts}/webview-code-${theme}.png` });
    });
  }

  it("copies any code block and inserts an answer's at the cursor", async () => {
    const blocks = web.page.locator(".msg-assistant .code-block");
    expect(await blocks.count()).toBe(2);
    expect(await blocks.first().locator(".code-lang").textContent()).toBe("ts");
    await web.clearPosted();
    await blocks.first().getByRole("button", { name: "Copy" }).click();
    await blocks.nth(1).getByRole("button", { name: "Insert" }).click();
    const posted = await web.posted();
    expect(posted[0]).toEqual({ type: "copy", text: ANSWER.split("```ts\n")[1]!.split("```")[0] });
    expect(posted[1]).toEqual({ type: "insertCode", text: "npm test\n", language: "" });
    expect(await blocks.first().locator(".code-button", { hasText: "Copied" }).count()).toBe(1);
  });

  it("draws a 2,000-call session in the dark and light themes (screenshots)", async () => {
    const session = longSession(2000);
    session.emit({ kind: "message.delta", messageId: "m_live", text: "All **2,000** steps are done; the billing tests pass. Here is the helper I added:\n\n```ts\nexport const cents = (x: number) => Math.round(x * 100);\n```\n" });
    await web.page.setViewportSize({ width: 440, height: 1200 });
    for (const theme of ["dark", "light"] as Theme[]) {
      await web.load(theme);
      const reset = new ViewSync().next({
        server: { state: "running" },
        trusted: true,
        sessions: [],
        sessionId: session.run.sessionId,
        sessionTitle: "Refactor the billing module",
        runs: [session.run],
        childRuns: [],
        liveRunId: session.run.runId,
        pendingSteers: [],
        busy: false,
        model: { kind: "setting", label: "openai:gpt-4.1-mini" },
      })!;
      await web.post(reset);
      await web.page.waitForSelector(".code-block code.hljs", { timeout: 10_000 });
      const drawn = await web.page.locator(".rows > *").count();
      expect(drawn).toBeLessThanOrEqual(240);
      expect(await web.page.locator("button.show-earlier").textContent()).toContain("not shown");
      await web.page.screenshot({ path: `${artifacts}/webview-2000-calls-${theme}.png` });
    }
    await web.page.setViewportSize({ width: 440, height: 700 });
  });
});
