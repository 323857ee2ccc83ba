import { describe, expect, it } from "vitest";
import type * as vscode from "vscode";
import { ORIGINAL_SCHEME, PROPOSED_SCHEME, ProposalContentProvider, proposalUri } from "../../src/approvals/proposals";

describe("proposal documents", () => {
  it("each scheme's provider announces changes of its own scheme only, and serves its side", () => {
    const proposals = new ProposalContentProvider();
    const original = proposals.forScheme(ORIGINAL_SCHEME);
    const proposed = proposals.forScheme(PROPOSED_SCHEME);
    const seen: Record<string, string[]> = { original: [], proposed: [] };
    original.onDidChange!((u: vscode.Uri) => seen.original!.push(u.scheme));
    proposed.onDidChange!((u: vscode.Uri) => seen.proposed!.push(u.scheme));
    proposals.set("a1", [{ path: "/ws/README.md", uri: "file:///ws/README.md", oldText: "old\n", newText: "new\n" }]);
    expect(seen.original).toEqual([ORIGINAL_SCHEME]);
    expect(seen.proposed).toEqual([PROPOSED_SCHEME]);
    const token = {} as vscode.CancellationToken;
    expect(original.provideTextDocumentContent(proposalUri("a1", 0, "original", "/ws/README.md"), token)).toBe("old\n");
    expect(proposed.provideTextDocumentContent(proposalUri("a1", 0, "proposed", "/ws/README.md"), token)).toBe("new\n");
  });
});
