// Turns the webview message definition (src/chat/messages.schema.json) into TypeScript: the
// types of every message and a validator for the definitions listed in `x-validate`.
// Types and validator come from one reading of the schema, and that reading knows a small set of
// keywords only: any other keyword fails the generation, so the validator never silently
// ignores a constraint the schema states. Pure (no file access): gen-messages.mjs does the I/O.

/** Keywords that only document. */
const ANNOTATIONS = new Set(["title", "description", "default", "examples", "$comment"]);
/** Keywords both the types and the validator understand. */
const KEYWORDS = new Set([
  "$ref",
  "tsType",
  "const",
  "enum",
  "oneOf",
  "anyOf",
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
]);
const ROOT_KEYWORDS = new Set(["$schema", "$defs", "x-validate", "x-tsImports", "x-tsRefModules", ...ANNOTATIONS]);
const TYPES = new Set(["string", "number", "integer", "boolean", "null", "object", "array"]);

export class SchemaError extends Error {}

/**
 * @param {object} schema the definition (its `$defs` are the generated names)
 * @param {{ load: (uri: string) => object, banner: string }} options `load` reads a schema
 *   another one refers to (a `$ref` outside this file), by the reference's URI part
 * @returns {string} the TypeScript module
 */
export function generate(schema, options) {
  return new Generator(schema, options).run();
}

class Generator {
  constructor(schema, { load, banner }) {
    this.root = schema;
    this.load = load;
    this.banner = banner;
    this.docs = new Map([["", schema]]);
    /** name → module, for type-only imports */
    this.imports = new Map();
    /** validator function name → [doc, def name], emitted once each */
    this.checkers = new Map();
    this.queue = [];
  }

  run() {
    for (const key of Object.keys(this.root)) {
      if (!ROOT_KEYWORDS.has(key)) throw new SchemaError(`unsupported top-level keyword "${key}"`);
    }
    const defs = this.root.$defs ?? {};
    const tsImports = this.root["x-tsImports"] ?? {};
    this.tsImports = tsImports;
    this.refModules = this.root["x-tsRefModules"] ?? {};

    const types = Object.entries(defs).map(([name, node]) => this.declaration(name, node, ["#", "$defs", name]));

    const validated = this.root["x-validate"] ?? [];
    const entryPoints = validated.map((name) => {
      if (!(name in defs)) throw new SchemaError(`x-validate: no definition "${name}"`);
      const fn = this.checkerFor("", name);
      return [
        `/** Why \`value\` is not a valid {@link ${name}} (the first problem found), or undefined. */`,
        `export function check${name}(value: unknown): string | undefined {`,
        `  return ${fn}(value, ${JSON.stringify(lowerFirst(name))});`,
        `}`,
        ``,
        `/** Whether \`value\` is a valid {@link ${name}} (see {@link check${name}} for why not). */`,
        `export function is${name}(value: unknown): value is ${name} {`,
        `  return check${name}(value) === undefined;`,
        `}`,
      ].join("\n");
    });
    const checkers = [];
    while (this.queue.length > 0) checkers.push(this.checker(...this.queue.shift()));

    const importLines = [...groupBy(this.imports)]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([module, names]) => `import type { ${[...names].sort().join(", ")} } from ${JSON.stringify(module)};`);
    const parts = [this.banner, importLines.join("\n"), types.join("\n\n")];
    if (entryPoints.length > 0) {
      parts.push(
        [
          "// ---------------------------------------------------------------------------",
          "// Validation",
          "",
          "function isRecord(value: unknown): value is Record<string, unknown> {",
          '  return typeof value === "object" && value !== null && !Array.isArray(value);',
          "}",
          "",
          entryPoints.join("\n\n"),
          "",
          checkers.join("\n\n"),
        ].join("\n"),
      );
    }
    return parts.filter((p) => p !== "").join("\n\n") + "\n";
  }

  // ---- references -------------------------------------------------------------------------

  /** [doc URI, def name] of a `$ref` (relative to the doc it appears in). */
  resolve(ref, doc, where) {
    const hash = ref.indexOf("#");
    if (hash < 0) throw new SchemaError(`${where}: $ref "${ref}" has no fragment`);
    const uri = ref.slice(0, hash) || doc;
    const match = /^\/\$defs\/([A-Za-z_][A-Za-z0-9_]*)$/.exec(ref.slice(hash + 1));
    if (!match) throw new SchemaError(`${where}: $ref "${ref}" must point at #/$defs/<Name>`);
    if (ref.slice(0, hash) !== "" && doc !== "") throw new SchemaError(`${where}: $ref "${ref}" reaches past a referenced schema`);
    const target = this.doc(uri, where);
    const name = match[1];
    if (!target.$defs || !(name in target.$defs)) throw new SchemaError(`${where}: $ref "${ref}": no such definition`);
    return [uri, name];
  }

  doc(uri, where) {
    if (!this.docs.has(uri)) {
      if (!(uri in this.refModules)) throw new SchemaError(`${where}: "${uri}" is not in x-tsRefModules`);
      this.docs.set(uri, this.load(uri));
    }
    return this.docs.get(uri);
  }

  def(uri, name) {
    return this.docs.get(uri).$defs[name];
  }

  // ---- types ------------------------------------------------------------------------------

  declaration(name, node, path) {
    validateKeywords(node, path);
    const doc = jsdoc(node.description, "");
    if (isPlainObject(node)) return `${doc}export interface ${name} ${this.objectType(node, path, "")}`;
    const t = this.type(node, path, "", true);
    return `${doc}export type ${name} =${t.startsWith("\n") ? "" : " "}${t};`;
  }

  /** The TypeScript type of `node`; `top`: a union may be laid out one member per line. */
  type(node, path, indent, top = false) {
    validateKeywords(node, path);
    const where = path.join("/");
    if (node.$ref !== undefined) {
      const [uri, name] = this.resolve(node.$ref, "", where);
      if (uri !== "") this.addImport(name, this.refModules[uri]);
      return name;
    }
    if (node.tsType !== undefined) {
      for (const id of node.tsType.match(/\b[A-Z][A-Za-z0-9_]*\b/g) ?? []) {
        if (["Partial", "Record", "Readonly", "Pick", "Omit"].includes(id)) continue;
        if (!(id in this.tsImports)) throw new SchemaError(`${where}: tsType names ${id}, which is not in x-tsImports`);
        this.addImport(id, this.tsImports[id]);
      }
      return node.tsType;
    }
    if (node.const !== undefined) return JSON.stringify(node.const);
    if (node.enum !== undefined) return node.enum.map((v) => JSON.stringify(v)).join(" | ");
    const union = node.oneOf ?? node.anyOf;
    if (union !== undefined) {
      const members = union.map((branch, i) => {
        const t = this.type(branch, [...path, node.oneOf ? "oneOf" : "anyOf", String(i)], top ? `${indent}  ` : indent);
        return [branch.description, t];
      });
      if (top && members.some(([, t]) => t.includes("\n") || t.length > 40)) {
        return members.map(([d, t]) => `\n${jsdoc(d, `${indent}  `)}${indent}  | ${t}`).join("");
      }
      return members.map(([, t]) => (t.includes(" ") && !t.startsWith("{") ? `(${t})` : t)).join(" | ");
    }
    switch (node.type) {
      case "string":
        return "string";
      case "number":
      case "integer":
        return "number";
      case "boolean":
        return "boolean";
      case "null":
        return "null";
      case "array": {
        const item = this.type(node.items ?? {}, [...path, "items"], indent);
        return /^[A-Za-z0-9_.<>"]+$/.test(item) || isBraced(item) ? `${item}[]` : `(${item})[]`;
      }
      case "object":
        return this.objectType(node, path, indent);
      default:
        throw new SchemaError(`${where}: a schema needs one of $ref, tsType, const, enum, oneOf, anyOf or type`);
    }
  }

  objectType(node, path, indent) {
    const properties = node.properties ?? {};
    const required = new Set(node.required ?? []);
    for (const name of required) {
      if (!(name in properties)) throw new SchemaError(`${path.join("/")}: required "${name}" is not a property`);
    }
    const extra = node.additionalProperties;
    if (Object.keys(properties).length === 0) {
      if (extra === false) return "Record<string, never>";
      if (extra === undefined || extra === true) return "Record<string, unknown>";
      return `Record<string, ${this.type(extra, [...path, "additionalProperties"], indent)}>`;
    }
    if (extra !== undefined && extra !== false && extra !== true) {
      throw new SchemaError(`${path.join("/")}: additionalProperties with a schema only goes without properties`);
    }
    const inner = `${indent}  `;
    const lines = Object.entries(properties).map(([name, prop]) => {
      const t = this.type(prop, [...path, "properties", name], inner);
      const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
      return `${jsdoc(prop.description, inner)}${inner}${key}${required.has(name) ? "" : "?"}: ${t};`;
    });
    return `{\n${lines.join("\n")}\n${indent}}`;
  }

  addImport(name, module) {
    if (name in (this.root.$defs ?? {})) throw new SchemaError(`${name} is both defined here and imported from ${module}`);
    const known = this.imports.get(name);
    if (known !== undefined && known !== module) throw new SchemaError(`${name} is imported from both ${known} and ${module}`);
    this.imports.set(name, module);
  }

  // ---- validator --------------------------------------------------------------------------

  /** The name of the function checking definition `name` of doc `uri` (queued to be written). */
  checkerFor(uri, name) {
    const fn = `${lowerFirst(name)}Problem`;
    const known = this.checkers.get(fn);
    if (known === undefined) {
      this.checkers.set(fn, [uri, name]);
      this.queue.push([fn, uri, name]);
    } else if (known[0] !== uri) {
      throw new SchemaError(`two referenced schemas define ${name}`);
    }
    return fn;
  }

  checker(fn, uri, name) {
    const node = this.def(uri, name);
    const body = this.check(node, uri, "value", "${at}", `${uri}#/$defs/${name}`, "  ");
    // A tagged union returns from every branch of its switch.
    if (node.oneOf === undefined) body.push("  return undefined;");
    return [`function ${fn}(value: unknown, at: string): string | undefined {`, ...body, "}"].join("\n");
  }

  /**
   * Statements that return a problem (a string) when the variable `v` does not match `node`.
   * `at` is a template literal's inside naming where the value is (`${at}.edits[${i}]`); the
   * variables a check declares are named after `v` and the property, so the generated code
   * changes only where the schema does.
   */
  check(node, uri, v, at, where, indent, known = {}) {
    validateKeywords(node, [where]);
    const out = [];
    const fail = (cond, problem) => out.push(`${indent}if (${cond}) return \`${at}: ${problem}\`;`);
    if (node.tsType !== undefined) throw new SchemaError(`${where}: a tsType cannot be validated (it is in what x-validate names)`);
    if (node.$ref !== undefined) {
      const [refUri, name] = this.resolve(node.$ref, uri, where);
      const e = `${v}Problem`;
      out.push(`${indent}const ${e} = ${this.checkerFor(refUri, name)}(${v}, \`${at}\`);`);
      out.push(`${indent}if (${e} !== undefined) return ${e};`);
      return out;
    }
    if (node.const !== undefined) {
      fail(`${v} !== ${JSON.stringify(node.const)}`, `expected ${escapeTemplate(JSON.stringify(node.const))}`);
      return out;
    }
    if (node.enum !== undefined) {
      const list = node.enum.map((x) => JSON.stringify(x)).join(", ");
      fail(`!([${list}] as unknown[]).includes(${v})`, `expected one of ${escapeTemplate(list)}`);
      return out;
    }
    if (node.oneOf !== undefined) return this.checkTagged(node, uri, v, at, where, indent);
    if (node.anyOf !== undefined) {
      const tries = node.anyOf.map((branch, i) => {
        const x = `${v}Option${i}`;
        const body = this.check(branch, uri, x, at, `${where}/anyOf/${i}`, `${indent}    `);
        return `${indent}  ((${x}: unknown): string | undefined => {\n${body.join("\n")}\n${indent}    return undefined;\n${indent}  })(${v}) === undefined`;
      });
      out.push(`${indent}if (`, `${indent}  !(`, tries.join(" ||\n"), `${indent}  )`, `${indent})`);
      out.push(`${indent}  return \`${at}: matches none of its ${node.anyOf.length} shapes\`;`);
      return out;
    }
    switch (node.type) {
      case "string":
        fail(`typeof ${v} !== "string"`, "expected a string");
        if (node.minLength !== undefined) fail(`${v}.length < ${node.minLength}`, `expected at least ${plural(node.minLength, "character")}`);
        if (node.maxLength !== undefined) fail(`${v}.length > ${node.maxLength}`, `expected at most ${plural(node.maxLength, "character")}`);
        return out;
      case "number":
      case "integer":
        if (node.type === "integer") fail(`typeof ${v} !== "number" || !Number.isInteger(${v})`, "expected an integer");
        else fail(`typeof ${v} !== "number" || !Number.isFinite(${v})`, "expected a finite number");
        if (node.minimum !== undefined) fail(`${v} < ${node.minimum}`, `expected at least ${node.minimum}`);
        if (node.maximum !== undefined) fail(`${v} > ${node.maximum}`, `expected at most ${node.maximum}`);
        return out;
      case "boolean":
        fail(`typeof ${v} !== "boolean"`, "expected a boolean");
        return out;
      case "null":
        fail(`${v} !== null`, "expected null");
        return out;
      case "array": {
        fail(`!Array.isArray(${v})`, "expected an array");
        const i = `${v}Index`;
        const item = `${v}Item`;
        out.push(`${indent}for (let ${i} = 0; ${i} < ${v}.length; ${i}++) {`);
        out.push(`${indent}  const ${item}: unknown = ${v}[${i}];`);
        out.push(...this.check(node.items ?? {}, uri, item, `${at}[\${${i}}]`, `${where}/items`, `${indent}  `));
        out.push(`${indent}}`);
        return out;
      }
      case "object":
        return this.checkObject(node, uri, v, at, where, indent, known, out, fail);
      default:
        throw new SchemaError(`${where}: a schema needs one of $ref, tsType, const, enum, oneOf, anyOf or type`);
    }
  }

  /** `known.tag`: a property a tagged union already matched (and `v` is known to be a record). */
  checkObject(node, uri, v, at, where, indent, known, out, fail) {
    if (known.tag === undefined) fail(`!isRecord(${v})`, "expected an object");
    const properties = node.properties ?? {};
    const required = new Set(node.required ?? []);
    for (const [name, prop] of Object.entries(properties)) {
      if (name === known.tag) continue;
      const p = `${v}${upperFirst(name.replace(/[^A-Za-z0-9_]/g, "_"))}`;
      const key = JSON.stringify(name);
      const propAt = `${at}.${escapeTemplate(name)}`;
      out.push(`${indent}const ${p}: unknown = ${v}[${key}];`);
      if (required.has(name)) {
        fail(`${p} === undefined`, `missing ${escapeTemplate(key)}`);
        out.push(...this.check(prop, uri, p, propAt, `${where}/properties/${name}`, indent));
      } else {
        // Optional: absent or undefined (postMessage keeps a property set to undefined).
        out.push(`${indent}if (${p} !== undefined) {`);
        out.push(...this.check(prop, uri, p, propAt, `${where}/properties/${name}`, `${indent}  `));
        out.push(`${indent}}`);
      }
    }
    const extra = node.additionalProperties;
    if (extra === undefined || extra === true) return out;
    const names = Object.keys(properties);
    const k = `${v}Key`;
    out.push(`${indent}for (const ${k} of Object.keys(${v})) {`);
    if (names.length > 0) out.push(`${indent}  if ([${names.map((n) => JSON.stringify(n)).join(", ")}].includes(${k})) continue;`);
    if (extra === false) {
      out.push(`${indent}  return \`${at}: unexpected property \${JSON.stringify(${k})}\`;`);
    } else {
      const x = `${v}Extra`;
      out.push(`${indent}  const ${x}: unknown = ${v}[${k}];`);
      out.push(...this.check(extra, uri, x, `${at}.\${${k}}`, `${where}/additionalProperties`, `${indent}  `));
    }
    out.push(`${indent}}`);
    return out;
  }

  /** A oneOf: every branch an object with the same required `const` property (its tag). */
  checkTagged(node, uri, v, at, where, indent) {
    const branches = node.oneOf.map((branch, i) => {
      if (branch.$ref === undefined) return { branch, target: branch, i };
      const [targetUri, name] = this.resolve(branch.$ref, uri, `${where}/oneOf/${i}`);
      return { branch, target: this.def(targetUri, name), i };
    });
    const tagsOf = ({ target }) =>
      Object.entries(target.properties ?? {})
        .filter(([name, p]) => p.const !== undefined && (target.required ?? []).includes(name))
        .map(([name]) => name);
    const tag = (branches.length > 0 ? tagsOf(branches[0]) : []).find((name) => branches.every((b) => tagsOf(b).includes(name)));
    if (tag === undefined) throw new SchemaError(`${where}: every oneOf branch must be an object with the same required const property`);
    const values = branches.map(({ target }) => target.properties[tag].const);
    if (new Set(values).size !== values.length) throw new SchemaError(`${where}: two oneOf branches have the same ${tag}`);
    const out = [];
    const tagValue = `${v}[${JSON.stringify(tag)}]`;
    out.push(`${indent}if (!isRecord(${v})) return \`${at}: expected an object\`;`);
    out.push(`${indent}switch (${tagValue}) {`);
    for (const { branch, target, i } of branches) {
      out.push(`${indent}  case ${JSON.stringify(values[i])}: {`);
      if (branch.$ref !== undefined) {
        out.push(...this.check(branch, uri, v, at, `${where}/oneOf/${i}`, `${indent}    `));
      } else {
        if (target.type !== "object") throw new SchemaError(`${where}/oneOf/${i}: expected an object schema`);
        out.push(...this.check(branch, uri, v, at, `${where}/oneOf/${i}`, `${indent}    `, { tag }));
      }
      out.push(`${indent}    return undefined;`);
      out.push(`${indent}  }`);
    }
    out.push(`${indent}}`);
    out.push(`${indent}return \`${at}: unknown ${tag} \${String(JSON.stringify(${tagValue})).slice(0, 40)}\`;`);
    return out;
  }
}

function validateKeywords(node, path) {
  if (typeof node !== "object" || node === null || Array.isArray(node)) {
    throw new SchemaError(`${path.join("/")}: a schema must be an object`);
  }
  for (const key of Object.keys(node)) {
    if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key)) throw new SchemaError(`${path.join("/")}: unsupported keyword "${key}"`);
  }
  if (node.type !== undefined && !TYPES.has(node.type)) throw new SchemaError(`${path.join("/")}: unsupported type ${JSON.stringify(node.type)}`);
  const values = node.enum ?? (node.const !== undefined ? [node.const] : undefined);
  if (values !== undefined && node.type !== undefined) {
    // `type` beside `enum`/`const` (as pydantic writes them) says nothing more, if it agrees.
    const ok = values.every((x) => (node.type === "integer" ? Number.isInteger(x) : x === null ? node.type === "null" : typeof x === node.type));
    if (!ok) throw new SchemaError(`${path.join("/")}: type ${node.type} does not fit ${JSON.stringify(values)}`);
  }
  const kinds = ["$ref", "tsType", "const", "enum", "oneOf", "anyOf", "type"].filter((k) => node[k] !== undefined && !(k === "type" && values !== undefined));
  if (kinds.length > 1) throw new SchemaError(`${path.join("/")}: use one of ${kinds.join(", ")}, not several`);
}

/** `{ ... }` as one object type (not `{ ... } | { ... }`). */
function isBraced(t) {
  if (!t.startsWith("{")) return false;
  let depth = 0;
  for (let i = 0; i < t.length; i++) {
    if (t[i] === "{") depth += 1;
    else if (t[i] === "}" && --depth === 0) return i === t.length - 1;
  }
  return false;
}

function isPlainObject(node) {
  return node.type === "object" && node.properties !== undefined && Object.keys(node.properties).length > 0;
}

function jsdoc(text, indent) {
  if (!text) return "";
  const lines = text.split("\n");
  if (lines.length === 1) return `${indent}/** ${text} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

function lowerFirst(s) {
  return s.charAt(0).toLowerCase() + s.slice(1);
}

function upperFirst(s) {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function escapeTemplate(s) {
  return s.replace(/[`\\]/g, "\\$&").replace(/\$\{/g, "\\${");
}

function groupBy(imports) {
  const modules = new Map();
  for (const [name, module] of imports) {
    if (!modules.has(module)) modules.set(module, new Set());
    modules.get(module).add(name);
  }
  return modules;
}
