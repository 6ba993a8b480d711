#!/usr/bin/env bash
# End-to-end test of the extension in a real VS Code: code-server (from npm) with the built VSIX
# installed, driven through its UI by playwright-core and Debian's Chromium, headless.
#
# Installs what it needs from the package registries only: apt (chromium, libkrb5-dev), npm
# (node@24 and code-server into a cache outside the repository; playwright-core is a
# devDependency of the extension, so `npm ci` brings it) and PyPI (the server's libraries,
# bundled into the VSIX). Then builds the VSIX, runs test/e2e/ui.test.mjs and prints one
# "N passed, N failed" line. Idempotent: a second run reuses the cache and takes under a minute.
# Needs: bash, npm, curl, a Python 3.10+ with pip, and root or sudo for apt on a first run.
#
# Environment: TRAINMEDIC_E2E_CACHE (default /opt/trainmedic-e2e), TRAINMEDIC_E2E_ARTIFACTS
# (screenshots; default <repo>/tests/artifacts/e2e), PYTHON (Python 3.10+ that bundles the
# server's libraries and runs the server; default python3), E2E_KEEP=1 keeps the run folder,
# UPDATE_README_SHOT=1 saves the results panel screenshot as media/panel.png for the README.
set -euo pipefail

EXT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(cd "$EXT/.." && pwd)
CACHE=${TRAINMEDIC_E2E_CACHE:-/opt/trainmedic-e2e}
ARTIFACTS=${TRAINMEDIC_E2E_ARTIFACTS:-$REPO/tests/artifacts/e2e}
PYTHON=${PYTHON:-python3}
CODE_SERVER_VERSION=4.139.1   # VS Code 1.139.1
NODE_MAJOR=24                 # code-server's postinstall refuses any other Node
CHROMIUM=/usr/bin/chromium

say() { printf 'e2e: %s\n' "$*" >&2; }
started=$SECONDS

# --- 1. Debian packages: Chromium (never a downloaded browser build), and the Kerberos headers
# that code-server's native kerberos module builds against ---------------------------------
APT_PACKAGES="chromium libkrb5-dev"
if ! dpkg -s $APT_PACKAGES >/dev/null 2>&1; then
    say "installing $APT_PACKAGES (apt)"
    SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $APT_PACKAGES >/dev/null
fi

# --- 2. Node 24 and code-server in the cache -----------------------------------------------
STAMP="$CACHE/.installed-node$NODE_MAJOR-code-server$CODE_SERVER_VERSION"
if [ ! -f "$STAMP" ]; then
    say "installing node@$NODE_MAJOR and code-server@$CODE_SERVER_VERSION into $CACHE"
    # From scratch: a half-finished earlier install leaves broken links behind.
    rm -rf "$CACHE/node_modules" "$CACHE/package-lock.json"
    mkdir -p "$CACHE"
    # Its own package.json, or npm walks up and installs into a parent project.
    echo '{"private": true}' > "$CACHE/package.json"
    (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error "node@$NODE_MAJOR")
    # code-server's install scripts must run under Node 24, so it comes first on PATH.
    (cd "$CACHE" && PATH="$CACHE/node_modules/.bin:$PATH" npm install --no-audit --no-fund --loglevel=error \
        "code-server@$CODE_SERVER_VERSION")
    touch "$STAMP"
fi
export PATH="$CACHE/node_modules/.bin:$PATH"
say "node $(node --version), code-server $(code-server --version | head -n1 | cut -d' ' -f1)"

# --- 3. The VSIX ---------------------------------------------------------------------------
cd "$EXT"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "npm ci"
    npm ci --no-audit --no-fund --loglevel=error
fi
say "packaging the extension"
PACKAGE_LOG=$(mktemp)
PYTHON="$PYTHON" npm run --silent package -- --out "$EXT/trainmedic-e2e.vsix" >"$PACKAGE_LOG" 2>&1 ||
    { cat "$PACKAGE_LOG" >&2; rm -f "$PACKAGE_LOG"; exit 1; }
rm -f "$PACKAGE_LOG"
VSIX="$EXT/trainmedic-e2e.vsix"

# --- 4. A fresh code-server with the VSIX installed ----------------------------------------
RUN=$(mktemp -d /tmp/trainmedic-e2e.XXXXXX)
CS_PID=""
cleanup() {
    if [ -n "$CS_PID" ]; then
        # The whole session (code-server, its extension host, the language server); or, when
        # setsid has not run yet, the process itself.
        kill -- "-$CS_PID" 2>/dev/null || kill "$CS_PID" 2>/dev/null || true
        wait "$CS_PID" 2>/dev/null || true
    fi
    if [ "${E2E_KEEP:-0}" = 1 ]; then say "run folder kept: $RUN"; else rm -rf "$RUN"; fi
}
trap cleanup EXIT

mkdir -p "$RUN/data/User" "$RUN/extensions" "$RUN/bin"
cp -r "$EXT/test/fixtures/workspace" "$RUN/workspace"
# A real torchrun --log-dir (per-rank stdout/stderr/error.json), shared with the Python tests.
cp -r "$REPO/tests/fixtures/torchrun-logdir" "$RUN/workspace/torchrun-logdir"
# Per-rank files without prefixes (rank0.log … + launcher.log), a real hang, and the healthy
# lines the test repeats into a 60 MB log: shared with the Python tests.
cp -r "$REPO/tests/fixtures/per-rank-files" "$RUN/workspace/per-rank-files"
cp "$REPO/tests/fixtures/launchers/torchrun-hang.log" "$REPO/tests/fixtures/lsp/healthy-2ranks.log" "$RUN/workspace/"
# A notebook with a risky cell and a failed one, shared with the Python tests.
cp "$REPO/tests/fixtures/notebooks/finetune.ipynb" "$RUN/workspace/finetune.ipynb"
# The server runs on the Python this test was given, found first on PATH as python3.
PYTHON_EXE=$(command -v "$PYTHON")
ln -s "$PYTHON_EXE" "$RUN/bin/python3"
cat > "$RUN/data/User/settings.json" <<'JSON'
{
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.disableAIFeatures": true,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "editor.hover.delay": 300,
  "terminal.integrated.gpuAcceleration": "off",
  "files.associations": { "*.log": "log" }
}
JSON
printf 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n' > "$RUN/config.yaml"
code-server --config "$RUN/config.yaml" --user-data-dir "$RUN/data" --extensions-dir "$RUN/extensions" \
    --install-extension "$VSIX" >"$RUN/install.log" 2>&1 || { cat "$RUN/install.log"; exit 1; }

# TRAINMEDIC_TEST_COMMANDS: the extension registers its test-only command (invokes its
# language-model tools as an agent does).
TRAINMEDIC_TEST_COMMANDS=1 PATH="$RUN/bin:$PATH" setsid code-server --config "$RUN/config.yaml" --user-data-dir "$RUN/data" \
    --extensions-dir "$RUN/extensions" --disable-telemetry --disable-update-check \
    --disable-workspace-trust "$RUN/workspace" >"$RUN/code-server.log" 2>&1 &
CS_PID=$!
PORT=""
for _ in $(seq 1 300); do
    PORT=$(sed -n 's#.*HTTP server listening on http://127.0.0.1:\([0-9]*\)/.*#\1#p' "$RUN/code-server.log" 2>/dev/null || true)
    if [ -n "$PORT" ] && curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz"; then break; fi
    PORT=""
    sleep 0.1
done
[ -n "$PORT" ] || { say "code-server did not start"; cat "$RUN/code-server.log"; exit 1; }
say "code-server on port $PORT ($((SECONDS - started)) s so far)"

# --- 5. The UI test ------------------------------------------------------------------------
mkdir -p "$ARTIFACTS"
status=0
README_SHOT=""
if [ "${UPDATE_README_SHOT:-0}" = 1 ]; then README_SHOT="$EXT/media/panel.png"; fi
CS_URL="http://127.0.0.1:$PORT" WORKSPACE="$RUN/workspace" ARTIFACTS="$ARTIFACTS" PROFILE="$RUN/chromium" \
    CHROMIUM="$CHROMIUM" README_SHOT="$README_SHOT" \
    node "$EXT/test/e2e/ui.test.mjs" || status=$?
if [ "$status" != 0 ]; then
    say "code-server log: $RUN/code-server.log"
    tail -n 40 "$RUN/code-server.log" >&2 || true
fi
say "done in $((SECONDS - started)) s"
exit "$status"
