import { defineConfig } from "vitest/config";

// The integration test drives the real Python server; it is not part of `npm test`.
export default defineConfig({
  test: {
    name: "integration",
    environment: "node",
    include: ["test/integration/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
