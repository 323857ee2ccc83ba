#!/usr/bin/env bash
# CI for the VS Code extension: install, check the generated protocol types and webview
# messages, lint, build, test (unit + webview in Chromium), package.
# Needs Node 20+ and Debian's chromium (/usr/bin/chromium, or set LOVIA_CHROMIUM).
# With LOVIA_PYTHON set (a Python with lovia installed) it also runs the integration test
# against the real Python server, and fails if that test skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== editor-extension: npm ci"
npm ci --no-audit --no-fund

echo "== editor-extension: generated protocol types are current"
npm run gen:protocol:check

echo "== editor-extension: generated webview messages are current"
npm run gen:messages:check

echo "== editor-extension: lint"
npm run lint

echo "== editor-extension: build"
npm run build

echo "== editor-extension: test (unit + browser)"
mkdir -p test/artifacts
npx vitest run --reporter=default --reporter=json --outputFile.json=test/artifacts/vitest.json
node -e '
  const r = require("./test/artifacts/vitest.json");
  console.log(`extension: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  if (r.numTotalTests === 0) { console.error("no extension test ran"); process.exit(1); }
'

if [ -n "${LOVIA_PYTHON:-}" ]; then
  echo "== editor-extension: integration test against the real server ($LOVIA_PYTHON)"
  npx vitest run --config vitest.integration.config.mts --reporter=default --reporter=json \
    --outputFile.json=test/artifacts/integration.json
  node -e '
    const r = require("./test/artifacts/integration.json");
    console.log(`integration: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);
    if (r.numPassedTests === 0 || r.numPendingTests > 0) { console.error("the integration test did not run"); process.exit(1); }
  '
fi

echo "== editor-extension: package"
rm -f lovia.vsix
npm run package
test -s lovia.vsix
echo "== editor-extension: ok ($(du -k lovia.vsix | cut -f1) KiB lovia.vsix)"
