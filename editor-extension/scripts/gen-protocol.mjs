// Generates src/protocol/generated.ts from the server's JSON Schema
// (lovia_server/protocol/schema.json, itself generated from the Python models).
//   node scripts/gen-protocol.mjs          write the file
//   node scripts/gen-protocol.mjs --check  exit 1 when the file is stale
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const schemaPath = join(root, "..", "lovia_server", "protocol", "schema.json");
const outPath = join(root, "src", "protocol", "generated.ts");

const banner = `/**
 * Types of the lovia editor protocol, generated from lovia_server/protocol/schema.json
 * by \`npm run gen:protocol\` (json-schema-to-typescript). Do not edit: change the Python
 * models, run \`python -m lovia_server.protocol.schema\`, then \`npm run gen:protocol\`.
 */`;

const schema = JSON.parse(await readFile(schemaPath, "utf8"));
const types = await compile(schema, "LoviaProtocol", {
  bannerComment: banner,
  additionalProperties: false,
  unknownAny: true,
  unreachableDefinitions: false,
  strictIndexSignatures: true,
  style: { printWidth: 120, singleQuote: false, trailingComma: "all" },
});

// The event kinds as a value too (the union's order), so no list of them is kept by hand.
const union = schema.$defs.LoviaEvent.oneOf ?? schema.$defs.LoviaEvent.anyOf;
const kinds = union.map((ref) => schema.$defs[ref.$ref.split("/").pop()].properties.kind.const);
const text =
  types +
  `\n/** Every event kind, in the order of the protocol's \`LoviaEvent\` union. */\n` +
  `export const EVENT_KIND_LIST = [\n${kinds.map((k) => `  ${JSON.stringify(k)},`).join("\n")}\n] as const;\n`;

let current = null;
try {
  current = await readFile(outPath, "utf8");
} catch {
  current = null;
}
if (process.argv.includes("--check")) {
  if (current !== text) {
    console.error(`${outPath} is stale: run \`npm run gen:protocol\` (after \`python -m lovia_server.protocol.schema\`)`);
    process.exit(1);
  }
  console.log("generated.ts is up to date");
} else if (current !== text) {
  await writeFile(outPath, text);
  console.log(`wrote ${outPath}`);
}
