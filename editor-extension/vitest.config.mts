import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const vscodeMock = fileURLToPath(new URL("./test/vscode-mock/vscode.ts", import.meta.url));

export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias: { vscode: vscodeMock } },
        test: {
          name: "unit",
          environment: "node",
          include: ["test/unit/**/*.test.ts", "test/protocol/**/*.test.ts"],
          testTimeout: 10_000,
        },
      },
      {
        test: {
          name: "browser",
          environment: "node",
          include: ["test/browser/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
