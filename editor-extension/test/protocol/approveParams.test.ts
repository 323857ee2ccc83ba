import { describe, expect, it } from "vitest";
import { approveParams } from "../../src/protocol";

const EDIT = { path: "/w/a.py", newText: "x = 1\n" };

describe("approveParams: a message only with a rejection, edits only with an allow", () => {
  it("keeps a rejection's reason, trimmed, and never sends edits with it", () => {
    expect(approveParams("r", "a", "reject_once", { message: "  not that file ", edits: [EDIT] })).toEqual({
      runId: "r",
      approvalId: "a",
      decision: "reject_once",
      message: "not that file",
    });
    expect(approveParams("r", "a", "reject_always", { message: "   " })).toEqual({ runId: "r", approvalId: "a", decision: "reject_always" });
  });

  it("keeps an allow's edits when there are some, and never a message", () => {
    expect(approveParams("r", "a", "allow_once", { message: "why", edits: [EDIT] })).toEqual({
      runId: "r",
      approvalId: "a",
      decision: "allow_once",
      edits: [EDIT],
    });
    expect(approveParams("r", "a", "allow_always", { edits: [] })).toEqual({ runId: "r", approvalId: "a", decision: "allow_always" });
  });
});
