import { beforeEach, describe, expect, it } from "vitest";
import { __mock } from "../vscode-mock/vscode";
import { pickModel } from "../../src/chat/modelPicker";
import { makeContext } from "./helpers";

function deps() {
  const restarts: string[] = [];
  return { restarts, deps: { context: makeContext(), restartForNewEnv: async (what: string) => void restarts.push(what) } };
}

describe("the model picker", () => {
  beforeEach(() => __mock.reset());

  it("offers OpenAI's Responses API as its own provider, with the OpenAI key", async () => {
    const { deps: d, restarts } = deps();
    let offered: string[] = [];
    __mock.state.quickPickAnswers.push((items: { label: string }[]) => {
      offered = items.map((i) => i.label);
      return items.find((i) => i.label === "OpenAI, Responses API");
    });
    __mock.state.inputBoxAnswers.push(" gpt-5-codex ", "sk-responses");
    const choice = await pickModel(d);
    expect(offered).toContain("OpenAI");
    expect(choice).toEqual({ kind: "model", model: "openai-responses:gpt-5-codex" });
    expect(await d.context.secrets.get("lovia.apiKey.openai")).toBe("sk-responses");
    expect(restarts).toEqual(["OPENAI_API_KEY saved."]);
  });

  it("keeps Chat Completions under openai: and asks for no key it already has", async () => {
    const { deps: d, restarts } = deps();
    await d.context.secrets.store("lovia.apiKey.openai", "sk-kept");
    __mock.state.quickPickAnswers.push((items: { label: string }[]) => items.find((i) => i.label === "OpenAI"));
    __mock.state.inputBoxAnswers.push("gpt-4.1");
    expect(await pickModel(d)).toEqual({ kind: "model", model: "openai:gpt-4.1" });
    expect(restarts).toEqual([]);
  });
});
