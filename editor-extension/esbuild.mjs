// Bundles the extension host code and the webview UI.
import * as esbuild from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

/** @type {import('esbuild').BuildOptions[]} */
const builds = [
  {
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
    sourcemap: !production,
    minify: production,
    logLevel: "warning",
  },
  {
    entryPoints: ["media/main.ts"],
    outfile: "dist/webview.js",
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2022",
    sourcemap: !production,
    minify: production,
    logLevel: "warning",
  },
  // Loaded by the webview the first time it draws a code block.
  {
    entryPoints: ["media/highlight.ts"],
    outfile: "dist/highlight.js",
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2022",
    sourcemap: false,
    minify: true,
    logLevel: "warning",
  },
];

await mkdir("dist", { recursive: true });
await copyFile("media/main.css", "dist/webview.css");
if (watch) {
  for (const options of builds) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
  }
  console.log("esbuild: watching");
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
  console.log(`esbuild: built ${builds.length} bundles${production ? " (production)" : ""}`);
}
