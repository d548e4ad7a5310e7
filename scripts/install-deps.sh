#!/usr/bin/env bash
# Installs everything zkfleet needs on a fresh Debian 12 machine:
# Debian packages (compiler, libraries, Prometheus for promtool and the
# metrics integration test) and the npm reference peers (snarkjs, circom2)
# pinned by package-lock.json, installed locally in ./node_modules.
# Idempotent: re-running only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  cppzmq-dev libzmq3-dev
  libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libspdlog-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libgmp-dev
  liblmdb-dev lmdb-utils libxxhash-dev   # the broker journal (LMDB), request payload hashes
  libsodium-dev                          # BLAKE2b digests of checked proving keys (the worker)
  prometheus python3 python3-yaml
  clang libclang-rt-dev   # libFuzzer and the fuzz targets (bench/fuzz, the test command's fuzz phase)
)
# Node.js: any install that provides node >= 18 and npm will do (Debian's
# nodejs/npm, or NodeSource's, whose nodejs bundles npm and conflicts with
# Debian's npm package), so only ask apt for them when the commands are missing.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: Debian packages already installed"
fi
# Debian's prometheus package starts a server on :9090; the tests run their own.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi

if [ ! -x node_modules/.bin/snarkjs ] || [ ! -e node_modules/.bin/circom2 ]; then
  echo "install-deps: npm ci (snarkjs, circom2 pinned in package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
else
  echo "install-deps: node_modules already present"
fi
