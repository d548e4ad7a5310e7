#!/usr/bin/env bash
# LMDB vs RocksDB vs SQLite (WAL) on the broker journal's write workload; results go to docs/journal-store.md.
# Standalone (not in CMake). Needs liblmdb-dev, librocksdb-dev, libsqlite3-dev.
#
# usage: bench/journal/run.sh [BUILD_DIR=build/bench-journal] [DATA_DIR=<mktemp -d under $TMPDIR or /tmp>]
# DATA_DIR must be on the disk being measured (not tmpfs); the large mode writes ~1 GiB at a time there.
# Takes about 3 minutes on the 2-core development VM (up to 4 when other jobs load the disk).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build/bench-journal}
data=${2:-}
mkdir -p "$build"
if [[ -z $data ]]; then
  data=$(mktemp -d "${TMPDIR:-/tmp}/store_compare.XXXXXX")
  trap 'rm -rf "$data"' EXIT
fi
if [[ $(stat -f -c %T "$data") == tmpfs ]]; then
  echo "run.sh: $data is on tmpfs; give a DATA_DIR on a real disk" >&2
  exit 1
fi

g++ -std=c++20 -O2 -Wall -Wextra -Werror "$here/store_compare.cpp" -llmdb -lrocksdb -lsqlite3 -o "$build/store_compare"

echo "# machine: $(nproc) cores, $(uname -srm), load average $(cut -d' ' -f1-3 /proc/loadavg), data dir $data ($(df --output=source "$data" | tail -1))"
echo "# lmdb $(dpkg-query -W -f '${Version}' liblmdb-dev 2>/dev/null || echo ?), rocksdb $(dpkg-query -W -f '${Version}' librocksdb-dev 2>/dev/null || echo ?), sqlite $(dpkg-query -W -f '${Version}' libsqlite3-dev 2>/dev/null || echo ?)"
echo
echo "## small records, 256 jobs per turn"
"$build/store_compare" --dir "$data" --jobs 200000 --batch 256 --witness-bytes 32 --reps 3
echo
echo "## small records, 16 jobs per turn (a lightly loaded broker: more syncs per job)"
"$build/store_compare" --dir "$data" --jobs 20000 --batch 16 --retain 2000 --witness-bytes 32 --reps 3
echo
echo "## large witness: 2^22 x 32 B = 128 MiB per job"
"$build/store_compare" --dir "$data" --jobs 8 --witness-bytes 134217728 --reps 5
