#!/usr/bin/env bash
# The real-VS-Code end-to-end suite: code-server (cached by code-server.sh) with the packaged
# lovia.vsix, driven through Debian's Chromium. The caller has run `npm ci`.
# Builds lovia.vsix when it is missing or older than the sources, then runs the scenarios in
# test/vscode/ one after another and prints "vscode-e2e: N passed, N failed".
#   LOVIA_PYTHON  a Python with lovia installed (default: the repository's .venv); it also
#                 builds the bundled wheel
#   Screenshots, timings.json and (on failure) logs: test/artifacts/vscode/
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ext="$(cd "$here/.." && pwd)"
repo="$(cd "$ext/.." && pwd)"
cd "$ext"

if [ -z "${LOVIA_PYTHON:-}" ] && [ -x "$repo/.venv/bin/python" ]; then
  export LOVIA_PYTHON="$repo/.venv/bin/python"
fi

# Debian's Chromium drives the workbench.
if [ ! -x "${LOVIA_CHROMIUM:-/usr/bin/chromium}" ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" = "0" ] || SUDO="sudo"
  echo "vscode-e2e: installing chromium" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# Package when lovia.vsix is missing or older than anything it is built from.
stale=1
if [ -f lovia.vsix ]; then
  newer="$(find src media package.json esbuild.mjs "$repo/lovia" "$repo/lovia_server" "$repo/pyproject.toml" \
    -newer lovia.vsix -type f \( -name '*.ts' -o -name '*.css' -o -name '*.py' -o -name '*.json' -o -name '*.mjs' -o -name '*.toml' -o -name '*.svg' \) \
    -print -quit 2>/dev/null || true)"
  [ -z "$newer" ] && stale=0
fi
if [ "$stale" = 1 ]; then
  echo "vscode-e2e: packaging lovia.vsix" >&2
  npm run --silent package >/dev/null
fi

bash "$here/code-server.sh" >/dev/null

mkdir -p test/artifacts/vscode
rm -f test/artifacts/vscode/results.json
start=$(date +%s)
set +e
npx vitest run --config vitest.vscode.config.mts "$@"
rc=$?
set -e
wall=$(( $(date +%s) - start ))

summary="$(node -e '
  const fs = require("fs");
  let r = {};
  try { r = JSON.parse(fs.readFileSync("test/artifacts/vscode/results.json", "utf8")); } catch {}
  const passed = r.numPassedTests ?? 0;
  const failed = (r.numFailedTests ?? 0) + (r.numTotalTests === undefined ? 1 : 0);
  process.stdout.write(`${passed} ${failed}`);
')"
read -r passed failed <<<"$summary"
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then failed=1; fi
node -e '
  const fs = require("fs"); const f = "test/artifacts/vscode/timings.json";
  let t = {}; try { t = JSON.parse(fs.readFileSync(f, "utf8")); } catch {}
  t.suiteWallSeconds = Number(process.argv[1]);
  fs.writeFileSync(f, JSON.stringify(t, null, 2) + "\n");
' "$wall"
# Name what failed last, where the tail of a CI log shows it.
node -e '
  const fs = require("fs");
  let r = {};
  try { r = JSON.parse(fs.readFileSync("test/artifacts/vscode/results.json", "utf8")); } catch {}
  for (const file of r.testResults ?? []) {
    for (const a of file.assertionResults ?? []) {
      const where = `${file.name.replace(/^.*\/test\//, "test/")}: ${a.title}`;
      if (a.status === "failed") {
        const why = (a.failureMessages ?? []).join(" | ").replace(/\x1b\[[0-9;]*m/g, "").replace(/\s+/g, " ").slice(0, 600);
        console.log(`vscode-e2e FAILED ${where}: ${why}`);
      }
    }
  }
'
echo "vscode-e2e: $passed passed, $failed failed"
[ "$rc" = 0 ] && [ "$failed" = 0 ]
