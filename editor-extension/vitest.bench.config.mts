import { defineConfig } from "vitest/config";

// The webview benchmark (bench/webview.bench.ts): Chromium, one file, run on demand.
export default defineConfig({
  test: {
    name: "bench",
    environment: "node",
    include: ["bench/**/*.bench.ts"],
    testTimeout: 300_000,
    hookTimeout: 60_000,
  },
});
