#!/usr/bin/env bash
# CI for the VS Code extension: install, lint, build, test (unit + webview in Chromium), package.
# Needs Node 20+ and Debian's chromium (/usr/bin/chromium, or set LOVIA_CHROMIUM).
# The integration test against the Python server is separate: npm run test:integration.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== editor-extension: npm ci"
npm ci --no-audit --no-fund

echo "== editor-extension: lint"
npm run lint

echo "== editor-extension: build"
npm run build

echo "== editor-extension: test (unit + browser)"
npx vitest run

echo "== editor-extension: package"
rm -f lovia.vsix
npm run package
test -s lovia.vsix
echo "== editor-extension: ok ($(du -k lovia.vsix | cut -f1) KiB lovia.vsix)"
