import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs build script without type declarations
import { generate, SchemaError } from "../../scripts/messages-codegen.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const script = join(root, "scripts", "gen-messages.mjs");
const schemaPath = join(root, "src", "chat", "messages.schema.json");
const generatedPath = join(root, "src", "chat", "messages.generated.ts");
const serverSchemaPath = join(root, "..", "lovia_server", "protocol", "schema.json");
const SERVER_REF = "../../../lovia_server/protocol/schema.json";
const tmp = mkdtempSync(join(tmpdir(), "lovia-gen-messages-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [script, ...args], { cwd: root });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The real schema in `tmp`, with its reference to the server's schema made absolute. */
function schemaCopy(edit: (schema: Record<string, unknown>) => void = () => undefined): string {
  const schema = JSON.parse(readFileSync(schemaPath, "utf8").replaceAll(SERVER_REF, serverSchemaPath)) as Record<string, unknown>;
  const refModules = schema["x-tsRefModules"] as Record<string, string>;
  edit(schema);
  expect(refModules[serverSchemaPath]).toBe("../protocol/generated");
  const path = join(tmp, `schema-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(schema));
  return path;
}

describe("gen-messages --check", () => {
  it("passes on the committed file, and writes the same file anew", async () => {
    expect(await run("--check")).toMatchObject({ code: 0 });
    const out = join(tmp, "fresh.ts");
    expect(await run("--out", out)).toMatchObject({ code: 0 });
    expect(readFileSync(out, "utf8")).toBe(readFileSync(generatedPath, "utf8"));
    expect(await run("--check", "--schema", schemaCopy(), "--out", out)).toMatchObject({ code: 0 });
  });

  it("fails when the generated file was edited by hand or is missing", async () => {
    const edited = join(tmp, "edited.ts");
    writeFileSync(edited, readFileSync(generatedPath, "utf8").replace('"ready"', '"readyy"'));
    const stale = await run("--check", "--out", edited);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("is stale: run `npm run gen:messages`");
    expect((await run("--check", "--out", join(tmp, "missing.ts"))).code).toBe(1);
  });

  it("fails when the schema changed and the file was not regenerated", async () => {
    const changed = schemaCopy((schema) => {
      const intents = (schema.$defs as Record<string, { oneOf: unknown[] }>).WebviewIntent!.oneOf;
      intents.push({ type: "object", properties: { type: { const: "newIntent" } }, required: ["type"], additionalProperties: false });
    });
    const out = join(tmp, "current.ts");
    writeFileSync(out, readFileSync(generatedPath, "utf8"));
    expect((await run("--check", "--schema", changed, "--out", out)).code).toBe(1);
    expect(await run("--schema", changed, "--out", out)).toMatchObject({ code: 0 });
    expect(readFileSync(out, "utf8")).toContain('case "newIntent":');
    expect((await run("--check", "--schema", changed, "--out", out)).code).toBe(0);
  });

  it("exits 2 naming the problem for a schema it cannot read", async () => {
    const bad = schemaCopy((schema) => {
      ((schema.$defs as Record<string, { properties: Record<string, unknown> }>).Mention!.properties.label as Record<string, unknown>).pattern = "^a";
    });
    const result = await run("--check", "--schema", bad, "--out", join(tmp, "never.ts"));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Mention/properties/label: unsupported keyword "pattern"');
  });
});

/** The module generated from `schema` (with `x-validate: ["Root"]`), transpiled and imported. */
async function compile(defs: Record<string, unknown>): Promise<Record<string, (v: unknown) => unknown>> {
  const text = generate({ "x-validate": ["Root"], $defs: defs }, { load: () => ({}), banner: "" }) as string;
  const js = ts.transpileModule(text, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  return (await import(`data:text/javascript,${encodeURIComponent(js)}`)) as Record<string, (v: unknown) => unknown>;
}

function refuses(defs: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  try {
    generate({ "x-validate": ["Root"], $defs: defs, ...extra }, { load: () => ({}), banner: "" });
  } catch (err) {
    expect(err).toBeInstanceOf(SchemaError);
    return (err as Error).message;
  }
  throw new Error("generated");
}

describe("the messages code generator", () => {
  it("validates what the schema says for every keyword it knows", async () => {
    const m = await compile({
      Root: {
        type: "object",
        properties: {
          after: { anyOf: [{ type: "string", maxLength: 3 }, { type: "null" }] },
          counts: { type: "object", additionalProperties: { type: "integer", minimum: 1, maximum: 9 } },
          open: { type: "object", properties: { a: { type: "boolean" } }, required: ["a"] },
          tags: { type: "array", items: { type: "array", items: { const: 7 } } },
        },
        required: ["after"],
        additionalProperties: false,
      },
    });
    const check = m.checkRoot!;
    expect(check({ after: null })).toBeUndefined();
    expect(check({ after: "abc", counts: { x: 1, y: 9 }, open: { a: true, more: 1 }, tags: [[7], []] })).toBeUndefined();
    expect(check({ after: "abcd" })).toBe("root.after: matches none of its 2 shapes");
    expect(check({ after: 1 })).toBe("root.after: matches none of its 2 shapes");
    expect(check({})).toBe('root: missing "after"');
    expect(check({ after: null, counts: { x: 10 } })).toBe("root.counts.x: expected at most 9");
    expect(check({ after: null, counts: { x: 0 } })).toBe("root.counts.x: expected at least 1");
    expect(check({ after: null, open: {} })).toBe('root.open: missing "a"');
    expect(check({ after: null, tags: [[7], [7, 8]] })).toBe("root.tags[1][1]: expected 7");
    expect(m.isRoot!({ after: null })).toBe(true);
  });

  it("types what it validates", () => {
    const text = generate(
      {
        $defs: {
          Root: { type: "object", properties: { a: { anyOf: [{ type: "string" }, { type: "null" }] }, b: { type: "array", items: { enum: [1, 2] } } }, required: ["a"] },
        },
      },
      { load: () => ({}), banner: "" },
    ) as string;
    expect(text).toContain("export interface Root {\n  a: string | null;\n  b?: (1 | 2)[];\n}");
    const rows = generate({ $defs: { Rows: { type: "array", items: { type: "object", properties: { k: { type: "string" } } } } } }, { load: () => ({}), banner: "" }) as string;
    expect(rows).toContain("export type Rows = {\n  k?: string;\n}[];");
  });

  it("refuses what it could not both type and validate", () => {
    expect(refuses({ Root: { type: "string", format: "uri" } })).toBe('#/$defs/Root: unsupported keyword "format"');
    expect(refuses({ Root: { type: ["string", "null"] } })).toBe('#/$defs/Root: unsupported type ["string","null"]');
    expect(refuses({ Root: { type: "object", properties: { row: { tsType: "Row" } } } }, { "x-tsImports": { Row: "./rows" } })).toContain("a tsType cannot be validated");
    expect(refuses({ Root: { tsType: "Row" } })).toContain("tsType names Row, which is not in x-tsImports");
    expect(refuses({ Root: { oneOf: [{ type: "object", properties: { type: { const: "a" } }, required: ["type"] }, { type: "string" }] } })).toContain("same required const property");
    expect(refuses({ Root: { $ref: "#/$defs/Nope" } })).toContain('$ref "#/$defs/Nope": no such definition');
    expect(refuses({ Root: { $ref: "other.json#/$defs/X" } })).toContain('"other.json" is not in x-tsRefModules');
    expect(refuses({ Root: { type: "object", properties: {}, required: ["a"] } })).toContain('required "a" is not a property');
    expect(refuses({ Root: { const: 1, type: "string" } })).toContain("type string does not fit [1]");
    expect(refuses({}, { "x-validate": ["Nope"] })).toBe('x-validate: no definition "Nope"');
    expect(refuses({ Root: { type: "array", items: { tsType: "Row" } }, Row: { type: "string" } }, { "x-validate": [], "x-tsImports": { Row: "./rows" } })).toBe(
      "Row is both defined here and imported from ./rows",
    );
  });
});
