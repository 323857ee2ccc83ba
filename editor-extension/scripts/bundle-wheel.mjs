// Builds the lovia wheel from this repository into python/, where the packaged extension
// finds it to install lovia into a private environment on first run.
//   LOVIA_PYTHON  the Python used to build (default: python3)
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const extension = join(here, "..");
const repo = join(extension, "..");
const out = join(extension, "python");
const python = process.env.LOVIA_PYTHON || "python3";

mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (f.endsWith(".whl")) rmSync(join(out, f));
execFileSync(python, ["-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", out, repo], {
  stdio: ["ignore", "inherit", "inherit"],
});
const wheels = readdirSync(out).filter((f) => /^lovia_agents-.+\.whl$/.test(f));
if (wheels.length !== 1) {
  console.error(`bundle-wheel: expected one lovia_agents wheel in ${out}, found ${wheels.join(", ") || "none"}`);
  process.exit(1);
}
console.log(`bundle-wheel: ${join("python", wheels[0])}`);
