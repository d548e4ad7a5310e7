#!/usr/bin/env bash
# Configures and builds zkfleet (Release, CUDA when nvcc is present) into
# build/release. Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release "$@" >/dev/null
cmake --build --preset release -j "$(nproc)"
