#!/usr/bin/env bash
# Unpacks the fleet carry (bench/gpu/pack_fleet_carry.sh) for tools other than
# fleet_gpu_bench.sh (which unpacks it itself), e.g. bench/fetch/fetch_bench.sh
# with the carry's nginx on the GPU machine:
#
#   eval "$(bash bench/gpu/unpack_fleet_carry.sh /tmp/fleet-carry)"
#   bash bench/fetch/fetch_bench.sh          # NGINX, LD_LIBRARY_PATH and PATH now point into the carry
#
# Prints the export lines (stdout only); tar, or python3's tarfile where xz is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${1:-/tmp/fleet-carry}
CARRY_DIR=${CARRY_DIR:-.carry/gpu-fleet}
for part in bin lib; do
  a=$(ls "$CARRY_DIR/$part".tar.* 2>/dev/null | head -n 1)
  [[ -n "$a" ]] || { echo "no $CARRY_DIR/$part.tar.xz: run bench/gpu/pack_fleet_carry.sh and carry $CARRY_DIR" >&2; exit 1; }
  mkdir -p "$DEST/$part"
  if command -v xz >/dev/null; then tar xf "$a" -C "$DEST/$part"
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$a" "$DEST/$part"; fi
done
DEST=$(cd "$DEST" && pwd)
echo "export LD_LIBRARY_PATH=$DEST/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
echo "export PATH=$DEST/bin:\$PATH"
[[ -x "$DEST/bin/nginx" ]] && echo "export NGINX=$DEST/bin/nginx"
[[ -x "$DEST/bin/openssl" ]] && echo "export OPENSSL=$DEST/bin/openssl"
echo "unpacked $CARRY_DIR into $DEST: $(ls "$DEST/bin" | tr '\n' ' ')" >&2
