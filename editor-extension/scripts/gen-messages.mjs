// Generates src/chat/messages.generated.ts (the webview messages' types and validator) from
// src/chat/messages.schema.json; see messages-codegen.mjs for what the schema may say.
//   node scripts/gen-messages.mjs          write the file
//   node scripts/gen-messages.mjs --check  exit 1 when the file is stale
// `--schema <file>` and `--out <file>` name other files (the generator's own tests use them).
import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { generate, SchemaError } from "./messages-codegen.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? resolve(args[i + 1]) : fallback;
};
const schemaPath = option("--schema", join(root, "src", "chat", "messages.schema.json"));
const outPath = option("--out", join(root, "src", "chat", "messages.generated.ts"));

const banner = `/**
 * The messages between the extension and the chat webview, generated from
 * src/chat/messages.schema.json by \`npm run gen:messages\` (scripts/gen-messages.mjs).
 * Do not edit: change the schema, then run \`npm run gen:messages\`.
 */`;

let text;
try {
  const schema = JSON.parse(await readFile(schemaPath, "utf8"));
  // A $ref outside the schema is a path relative to the schema file (the server's schema.json).
  const load = (uri) => JSON.parse(readFileSync(resolve(dirname(schemaPath), uri), "utf8"));
  text = generate(schema, { load, banner });
} catch (err) {
  if (!(err instanceof SchemaError || err instanceof SyntaxError || err?.code === "ENOENT")) throw err;
  console.error(`${relative(process.cwd(), schemaPath)}: ${err.message}`);
  process.exit(2);
}

let current = null;
try {
  current = await readFile(outPath, "utf8");
} catch {
  current = null;
}
if (args.includes("--check")) {
  if (current !== text) {
    console.error(`${relative(process.cwd(), outPath)} is stale: run \`npm run gen:messages\``);
    process.exit(1);
  }
  console.log(`${relative(process.cwd(), outPath)} is up to date`);
} else if (current !== text) {
  await writeFile(outPath, text);
  console.log(`wrote ${relative(process.cwd(), outPath)}`);
}
