import { describe, expect, it } from "vitest";
import { routeCommand, type CodeActionUi } from "../../src/chat/codeActions";

function ui(answer?: string) {
  const seen: string[] = [];
  const value: CodeActionUi = {
    reveal: () => void seen.push("reveal"),
    openSession: (id) => Promise.resolve(void seen.push(`open ${id}`)),
    input: (prompt) => Promise.resolve((seen.push(`input ${prompt}`), answer)),
  };
  return { seen, ui: value };
}

describe("the code actions' commands", () => {
  const fix = { uri: "file:///ws/app.py", problems: [{ message: "undefined name" }] };

  it("opens the run a fix started in the panel, with the server's answer returned", async () => {
    const { seen, ui: u } = ui();
    const sent: unknown[] = [];
    const result = await routeCommand("lovia.action.fix", [fix], (c, a) => (sent.push([c, a]), Promise.resolve({ runId: "r1", sessionId: "s1" })), u);
    expect(sent).toEqual([["lovia.action.fix", [fix]]]);
    expect(result).toEqual({ runId: "r1", sessionId: "s1" });
    expect(seen).toEqual(["reveal", "open s1"]);
  });

  it("asks for the question of Ask about this… and the message of Tell the agent…", async () => {
    const { seen, ui: u } = ui("why?");
    const sent: unknown[] = [];
    const next = (c: string, a: unknown[]) => (sent.push([c, a]), Promise.resolve({ runId: "r2", sessionId: "s2" }));
    await routeCommand("lovia.action.ask", [{ uri: "file:///ws/app.py" }], next, u);
    await routeCommand("lovia.action.tell", [{ runId: "r2" }], next, u);
    expect(sent).toEqual([
      ["lovia.action.ask", [{ uri: "file:///ws/app.py", prompt: "why?" }]],
      ["lovia.action.tell", [{ runId: "r2", message: "why?" }]],
    ]);
    expect(seen).toEqual(["input lovia: Ask about this", "reveal", "open s2", "input lovia: Tell the agent"]);
  });

  it("sends nothing when the input box is cancelled, and shows the approvals in the panel", async () => {
    const { seen, ui: u } = ui(undefined);
    const sent: unknown[] = [];
    const next = (c: string, a: unknown[]) => (sent.push([c, a]), Promise.resolve(null));
    expect(await routeCommand("lovia.action.ask", [{}], next, u)).toBeUndefined();
    expect(await routeCommand("lovia.action.approvals", [{}], next, u)).toBeUndefined();
    expect(sent).toEqual([]);
    expect(seen).toEqual(["input lovia: Ask about this", "reveal"]);
  });

  it("passes the other commands on untouched", async () => {
    const { seen, ui: u } = ui();
    const result = await routeCommand("lovia.run", [{ prompt: "x" }], () => Promise.resolve("ran"), u);
    expect(result).toBe("ran");
    expect(seen).toEqual([]);
  });
});
