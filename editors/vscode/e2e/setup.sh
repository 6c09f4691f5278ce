#!/usr/bin/env bash
# Installs what the VS Code end-to-end test (tests/editors/test_vscode_e2e.py) needs, offline from a real VS Code
# download: code-server 4.100.3 from npm (the newest that runs on node 20), Debian's chromium, and Playwright for
# Python (the driver only; it drives Debian's chromium, so no browser is downloaded).
#
#   bash editors/vscode/e2e/setup.sh          # with the project's virtual environment active
#
# code-server goes into editors/vscode/e2e/.cache/ (ignored by git; about 300 MB), or $TRITONIZE_E2E_CACHE.
# Its native modules are built here, which takes a few minutes.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${TRITONIZE_E2E_CACHE:-$HERE/.cache}
VERSION=4.100.3
PYTHON=${PYTHON:-python3}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

# Headers code-server's native modules build against, ripgrep for its search, chromium for Playwright.
$SUDO apt-get install -y --no-install-recommends \
  libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config build-essential python3 ripgrep chromium

mkdir -p "$CACHE/code-server"
cd "$CACHE/code-server"
[ -f package.json ] || echo '{"private": true}' > package.json
# The install scripts would download prebuilt binaries (ripgrep among them): skip them, then build from source.
npm install --ignore-scripts --no-audit --no-fund "code-server@$VERSION"

# From here on the native modules are built by their install scripts, which npm 11 skips unless allowed (older npm
# runs them anyway and ignores this setting).
export npm_config_dangerously_allow_all_scripts=true
cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts --no-audit --no-fund
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
npm_config_yes=true npm rebuild

cd ../..
npm_config_unsafe_perm=true npm run postinstall
cd "$CACHE/code-server"  # argon2 (the password hashing code-server loads at start) is hoisted up here
npm rebuild argon2

"$PYTHON" -m pip install --quiet "playwright>=1.50"

CODE_SERVER="$CACHE/code-server/node_modules/.bin/code-server"
echo "code-server: $CODE_SERVER ($(XDG_CONFIG_HOME="$CACHE/config" "$CODE_SERVER" --version | tail -n 1))"
echo "chromium: $(chromium --version)"
echo "playwright: $("$PYTHON" -m pip show playwright | sed -n 's/^Version: //p')"
