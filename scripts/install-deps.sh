#!/usr/bin/env bash
# Installs everything zkfleet needs on a fresh Debian 12 machine:
# Debian packages (compiler, libraries, Prometheus for promtool and the
# metrics integration test), the npm reference peers (snarkjs, circom2,
# @noble/curves for the BLS12-381 Groth16 verifier oracle) pinned by
# package-lock.json, installed locally in ./node_modules, and the
# Python client's generated protobuf module and import path for this checkout
# (users install the client into a venv instead: docs/clients.md).
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
  libcurl4-openssl-dev libssl-dev openssl # witnesses by reference: the worker's fetcher (libcurl, OpenSSL's SHA-256)
  nginx-light                            # witnesses by reference: the tests' HTTP(S) store
  wabt                                   # jobs from inputs: wasm2c translates circuit.wasm (the worker compiles it with cc)
  prometheus python3 python3-yaml
  clang libclang-rt-dev   # libFuzzer and the fuzz targets (bench/fuzz, the test command's fuzz phase)
  python3-zmq python3-protobuf python3-pytest   # the Python client (clients/python) and its tests
  python3-venv                 # pip install ./clients/python into a venv (its build needs nothing more)
  libgrpc++-dev protobuf-compiler-grpc python3-grpcio  # the gRPC front door (zkfleet.v1), its C++ and Python stubs
  golang-go golang-google-grpc-dev protoc-gen-go protoc-gen-go-grpc  # the Go example client (clients/go), built offline
  etcd-server etcd-client  # the etcd journal (zkbroker --journal etcd://): the tests' members, etcdctl
  stress-ng                # scripts/test-under-load.sh: the tests beside 2 busy CPU workers per core
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
# The Python client, for working on this checkout: clients/python on
# Debian's python3 path via a .pth in the user's site-packages, so that
# `python3 -c 'import zkfleet'` works (the README, the tests). The .pth adds
# nothing inside a virtual environment, where the installed package (pip
# install ./clients/python, docs/clients.md) is the one to import. Debian's
# python3: python3-zmq is installed for it.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
user_site="$("$PY" -m site --user-site)"
mkdir -p "$user_site"
"$PY" -c 'import sys; print("import sys; sys.prefix == sys.base_prefix and sys.path.append(%r)" % sys.argv[1])' \
  "$PWD/clients/python" > "$user_site/zkfleet.pth"
echo "install-deps: zkfleet Python package: $PWD/clients/python (via $user_site/zkfleet.pth)"

# etcd's v3 API definitions (.proto), from which the build generates the
# broker's etcd client: Debian ships them in golang-etcd-server-dev, whose Go
# dependencies conflict with protoc-gen-go (the Go client's), so the package
# and the two whose .proto files it imports are unpacked into .deps/etcd-api
# (git-ignored) instead of installed.
ETCD_API_DEBS=(golang-etcd-server-dev golang-github-gogo-protobuf-dev golang-github-grpc-ecosystem-grpc-gateway-dev)
if [ ! -f .deps/etcd-api/usr/share/gocode/src/go.etcd.io/etcd/etcdserver/etcdserverpb/rpc.proto ]; then
  echo "install-deps: unpacking etcd's API definitions (${ETCD_API_DEBS[*]}) into .deps/etcd-api"
  rm -rf .deps/etcd-api.tmp && mkdir -p .deps/etcd-api.tmp
  ( cd .deps/etcd-api.tmp && { apt-get download -qq "${ETCD_API_DEBS[@]}" 2>/dev/null \
      || { $SUDO apt-get update -qq && apt-get download -qq "${ETCD_API_DEBS[@]}"; }; } )
  for deb in .deps/etcd-api.tmp/*.deb; do dpkg-deb -x "$deb" .deps/etcd-api.tmp/root; done
  rm -rf .deps/etcd-api && mv .deps/etcd-api.tmp/root .deps/etcd-api && rm -rf .deps/etcd-api.tmp
else
  echo "install-deps: etcd's API definitions already in .deps/etcd-api"
fi

# Debian's prometheus package starts a server on :9090; the tests run their own.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi

if [ ! -x node_modules/.bin/snarkjs ] || [ ! -e node_modules/.bin/circom2 ] \
   || [ ! -f node_modules/@noble/curves/package.json ]; then
  echo "install-deps: npm ci (snarkjs, circom2, @noble/curves pinned in package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
else
  echo "install-deps: node_modules already present"
fi
