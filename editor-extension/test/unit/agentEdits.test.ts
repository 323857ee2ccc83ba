import { describe, expect, it } from "vitest";
import { applyAgentEdit, touchedUris, type EditDocument } from "../../src/server/agentEdits";

class Doc implements EditDocument {
  saves = 0;
  constructor(public isDirty: boolean) {}
  save(): Promise<boolean> {
    this.saves += 1;
    this.isDirty = false;
    return Promise.resolve(true);
  }
}

describe("agent edits through workspace/applyEdit", () => {
  it("a file that was clean is saved after the agent's edit; one with unsaved text stays unsaved", async () => {
    const clean = new Doc(false);
    const dirty = new Doc(true);
    const docs = new Map<string, Doc>([
      ["file:///ws/clean.md", clean],
      ["file:///ws/dirty.md", dirty],
    ]);
    const result = await applyAgentEdit(
      { label: "lovia: Edit", edit: { changes: { "file:///ws/clean.md": [], "file:///ws/dirty.md": [] } } },
      () => {
        clean.isDirty = true; // what applying does to a buffer
        return { applied: true };
      },
      (u) => docs.get(u),
    );
    expect(result.applied).toBe(true);
    expect(clean.saves).toBe(1);
    expect(clean.isDirty).toBe(false);
    expect(dirty.saves).toBe(0);
    expect(dirty.isDirty).toBe(true);
  });

  it("a file the edit opened (not open before) is saved; nothing is saved when the edit was not applied", async () => {
    const opened = new Doc(true);
    const docs = new Map<string, Doc>();
    await applyAgentEdit(
      { label: "lovia: Write", edit: { documentChanges: [{ kind: "create", uri: "file:///ws/new.md" }, { textDocument: { uri: "file:///ws/new.md" } }] } },
      () => {
        docs.set("file:///ws/new.md", opened);
        return { applied: true };
      },
      (u) => docs.get(u),
    );
    expect(opened.saves).toBe(1);

    const refused = new Doc(false);
    await applyAgentEdit(
      { label: "lovia: Edit", edit: { changes: { "file:///ws/a.md": [] } } },
      () => {
        refused.isDirty = true;
        return { applied: false };
      },
      () => refused,
    );
    expect(refused.saves).toBe(0);
  });

  it("edits that are not lovia's are passed through untouched", async () => {
    const doc = new Doc(false);
    await applyAgentEdit({ label: "Rename symbol", edit: { changes: { "file:///ws/a.ts": [] } } }, () => {
      doc.isDirty = true;
      return { applied: true };
    }, () => doc);
    expect(doc.saves).toBe(0);
  });

  it("collects the URIs of text edits, creations and renames", () => {
    expect(
      touchedUris({
        changes: { "file:///a": [] },
        documentChanges: [{ textDocument: { uri: "file:///b" } }, { kind: "create", uri: "file:///c" }, { kind: "rename", uri: "file:///d", newUri: "file:///e" }, { kind: "delete", uri: "file:///f" }],
      }).sort(),
    ).toEqual(["file:///a", "file:///b", "file:///c", "file:///e"]);
  });
});
