import { defineConfig } from "vitest/config";

// The real-VS-Code suite (code-server + Chromium): slow, sequential, run by scripts/vscode-e2e.sh.
export default defineConfig({
  test: {
    name: "vscode",
    environment: "node",
    include: ["test/vscode/**/*.e2e.ts"],
    fileParallelism: false,
    sequence: { concurrent: false },
    testTimeout: 300_000,
    // A real VS Code on a busy 2-core machine: a scenario gets one more try from a fresh window
    // (vitest's own report marks a retried test; a real fault fails both times).
    retry: 1,
    hookTimeout: 180_000,
    reporters: ["default", ["json", { outputFile: "test/artifacts/vscode/results.json" }]],
  },
});
