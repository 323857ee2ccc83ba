/**
 * The chat panel's review and context features in a real VS Code (code-server):
 * an @file mention picked in the composer reaches the model (a scripted user agent repeats
 * what it was given), and an edit accepted hunk by hunk from the diff editor's CodeLens lands
 * only the kept hunk on disk, the model being told exactly what was applied.
 */
import { afterEach, expect, test } from "vitest";
import { repoPython, until, VsCodeWindow } from "./harness";

let win: VsCodeWindow | undefined;
let failed = true;

afterEach(async () => {
  await win?.stop(failed);
  win = undefined;
  failed = true;
});

const OLD = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
const NEW = OLD.replace("line 2\n", "line two\n").replace("line 19\n", "line nineteen\n");

const AGENTS_PY = `
from collections import deque

from lovia import Agent
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, ToolResultEntry

NEW = ${JSON.stringify(NEW)}


class Echo(ScriptedProvider):
    """Says what its prompt carried after the user's words (the attached context)."""

    async def stream(self, entries, **kw):
        prompt = next(e for e in entries if isinstance(e, InputEntry) and e.role == "user")
        content = prompt.content if isinstance(prompt.content, str) else str(prompt.content)
        attached = content.split("\\n\\n", 1)[-1]
        self.script = deque([text("I was given: " + " ".join(attached.split())[:400])])
        async for delta in super().stream(entries, **kw):
            yield delta


class Writer(ScriptedProvider):
    """Rewrites notes.txt, then repeats what the tool result told it."""

    async def stream(self, entries, **kw):
        results = [e for e in entries if isinstance(e, ToolResultEntry)]
        if not results:
            self.script = deque([call("write_file", {"path": "notes.txt", "content": NEW}, call_id="w1")])
        else:
            self.script = deque([text("The tool said: " + " ".join(results[-1].output.split())[:3000])])
        async for delta in super().stream(entries, **kw):
            yield delta


echo = Agent(name="echo", instructions="Repeat your context.", model=Echo([]))
writer = Agent(name="writer", instructions="Rewrite the notes.", model=Writer([]))
`;

async function open(scenario: string, agent: string, extra: Record<string, unknown> = {}): Promise<VsCodeWindow> {
  const w = new VsCodeWindow({
    scenario,
    files: { "agents.py": AGENTS_PY, "notes.txt": OLD, "docs/zebra.md": "# Zebra\n\nThe secret word is ZEBRA-42.\n", "README.md": "# panel project\n" },
    machineSettings: { "lovia.pythonPath": repoPython() },
    userSettings: { "lovia.agent": `agents.py:${agent}`, ...extra },
  });
  win = w;
  w.installExtension();
  await w.start();
  const view = await w.openPanel();
  await view.locator("button.send:not([disabled])").waitFor({ timeout: 90_000 });
  return w;
}

test("an @file mention picked in the composer reaches the model and shows as a chip", async () => {
  const w = await open("9-mention", "echo");
  const view = w.webview();
  const input = view.locator("textarea.composer-input");
  await input.click();
  await input.pressSequentially("What does @zeb", { delay: 40 });
  const option = view.locator(".mention-popup li", { hasText: "zebra.md" }).first();
  await option.waitFor({ timeout: 30_000 });
  await w.shot("mention-completion");
  await input.press("Enter");
  await expect.poll(() => input.inputValue()).toBe("What does @zebra.md ");
  await input.pressSequentially("say?");
  await input.press("Enter");
  const answer = view.locator("article.msg-assistant", { hasText: "I was given" });
  await answer.waitFor({ timeout: 90_000 });
  const said = await answer.innerText();
  expect(said).toContain("ZEBRA-42");
  expect(said).toContain("docs/zebra.md");
  const chip = view.locator("article.msg-user .chip", { hasText: "zebra.md" });
  await chip.waitFor({ timeout: 10_000 });
  await w.shot("mention-reached-the-model");
  failed = false;
});

test("accept an edit hunk by hunk from the diff editor: only the kept hunk lands, the model is told", async () => {
  // VS Code shows CodeLens in diff editors only with diffEditor.codeLens (off by default).
  const w = await open("10-hunks", "writer", { "lovia.permissions.pathRules": [{ pattern: "notes.txt", write: "ask" }], "diffEditor.codeLens": true });
  const view = w.webview();
  await view.locator("textarea.composer-input").fill("Rewrite the notes.");
  await view.locator("textarea.composer-input").press("Enter");
  await view.locator("article.approval-pending").waitFor({ timeout: 90_000 });
  // The diff editor opens on its own; each hunk has its CodeLens.
  const lens = (label: string) => w.page.locator(".monaco-diff-editor .codelens-decoration a", { hasText: label }).first();
  await until("the hunk CodeLens", () => lens("Reject hunk 2 of 2").isVisible(), 60_000, 250);
  await w.shot("hunk-codelens");
  await lens("Reject hunk 2 of 2").click();
  // The proposal in the diff editor lost the second hunk; one hunk is left to decide.
  await until("one hunk left", () => lens("Keep hunk 1 of 1").isVisible(), 30_000, 250);
  await w.shot("second-hunk-rejected");
  await lens("Keep hunk 1 of 1").click();
  const answer = view.locator("article.msg-assistant", { hasText: "The tool said" });
  await answer.waitFor({ timeout: 90_000 });
  await expect.poll(() => w.file("notes.txt"), { timeout: 20_000 }).toBe(OLD.replace("line 2\n", "line two\n"));
  const said = await answer.innerText();
  expect(said).toContain("approved a different version");
  expect(said).toContain("NOT applied");
  expect(await view.locator("article.tool .approval-outcome").first().innerText()).toContain("with your changes");
  await expect.poll(() => w.page.locator(".monaco-diff-editor").count(), { timeout: 15_000 }).toBe(0);
  await w.shot("kept-hunk-applied");
  failed = false;
});
