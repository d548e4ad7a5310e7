#!/usr/bin/env bash
# Builds zkfleet and runs every test (unit, integration, gpu). GPU tests on a
# machine without a GPU report themselves as skipped, with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --preset release -j "$(nproc)" "$@"
