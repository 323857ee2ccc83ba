import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";

export default tseslint.config(
  // generated.ts is generated from the server's schema (npm run gen:protocol); tsc still checks it.
  { ignores: ["dist/**", "out/**", "node_modules/**", "test/artifacts/**", "*.vsix", "src/protocol/generated.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      eqeqeq: ["error", "always"],
      "no-console": "off",
    },
  },
  {
    files: ["src/**/*.ts", "test/**/*.ts", "*.mjs", "*.ts", "scripts/**/*.mjs"],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ["media/**/*.ts"],
    languageOptions: { globals: { ...globals.browser } },
  },
);
