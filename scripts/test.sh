#!/usr/bin/env bash
# The README's test command: installs what the tests start when it is missing, then runs
# `cargo test --workspace --locked` with any arguments given (e.g. `scripts/test.sh -p pkm-core`).
#   - redis-server (Debian's package) for the fleet tests, crates/pkm-mcp/tests/it/http_fleet.rs;
#   - node >= 20 and the OpenID provider's packages (`npm ci --prefix tests/oauth`) for the OAuth
#     tests, crates/pkm-mcp/tests/it/http_oauth.rs.
# Installing a Debian package needs root or sudo; where neither is there, the script says what to
# install and stops before the tests run. .ci/run calls this script too.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { echo "test.sh: $*" >&2; }

apt_install() {
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    if ! command -v sudo >/dev/null; then
      say "$1 is missing and installing it needs root: apt-get install $*"
      exit 1
    fi
    sudo=(sudo)
  fi
  if ! command -v apt-get >/dev/null; then
    say "$1 is missing; install it with your system's package manager ($*)"
    exit 1
  fi
  say "installing $* (Debian packages)"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null
}

if ! command -v redis-server >/dev/null; then
  apt_install redis-server
fi

node_major() { node -e 'console.log(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt_install nodejs npm
fi
if (( $(node_major) < 20 )); then
  say "the OAuth tests' OpenID provider needs node >= 20; this machine has $(node --version)"
  exit 1
fi

# The provider's packages as package-lock.json pins them, installed again only when it changed.
if ! cmp -s tests/oauth/package-lock.json tests/oauth/node_modules/.installed-lock.json; then
  npm ci --prefix tests/oauth --no-audit --no-fund --loglevel=error
  cp tests/oauth/package-lock.json tests/oauth/node_modules/.installed-lock.json
fi

exec cargo test --workspace --locked "$@"
