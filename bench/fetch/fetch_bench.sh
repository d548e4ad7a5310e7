#!/usr/bin/env bash
# Witnesses by reference: GB/s of zkfleet_fetch over http, https (nginx on
# loopback, a test CA made here) and file://, with 1 and 4 threads.
#
#   bench/fetch/fetch_bench.sh            # 8 objects of 64 MiB
#   COUNT=16 SIZE_MIB=134 THREADS="1 4 8" bench/fetch/fetch_bench.sh
#
# Environment:
#   NGINX        nginx binary (default /usr/sbin/nginx; on the GPU host a
#                carried one, with LD_LIBRARY_PATH set by the caller)
#   OPENSSL      openssl CLI (default: openssl on PATH)
#   FETCH_BENCH  the fetch_bench binary (default build/cpu/bench/fetch/fetch_bench)
#   COUNT, SIZE_MIB, THREADS, SCHEMES ("http https file"), ROUNDS (2),
#   WORKERS      nginx worker processes (default: nproc, at most 8)
#   BENCH_ARGS   extra fetch_bench flags (e.g. --mlock)
#   KEEP_DIR=1   keep the temporary directory
# Prints each run's JSON line, then a table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
NGINX=${NGINX:-/usr/sbin/nginx}
FETCH_BENCH=${FETCH_BENCH:-$repo/build/cpu/bench/fetch/fetch_bench}
COUNT=${COUNT:-8}
SIZE_MIB=${SIZE_MIB:-64}
THREADS=${THREADS:-"1 4"}
SCHEMES=${SCHEMES:-"http https file"}
ROUNDS=${ROUNDS:-2}
cores=$(nproc)
WORKERS=${WORKERS:-$(( cores < 8 ? cores : 8 ))}
BENCH_ARGS=${BENCH_ARGS:-}
export OPENSSL=${OPENSSL:-openssl}

for tool in "$NGINX" "$FETCH_BENCH"; do
  [[ -x $tool ]] || { echo "fetch_bench.sh: $tool is not executable (set NGINX / FETCH_BENCH)" >&2; exit 2; }
done
command -v "$OPENSSL" >/dev/null || { echo "fetch_bench.sh: no openssl CLI (set OPENSSL)" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/zkfleet-fetch-bench-XXXXXX")
nginx_pid=
cleanup() {
  if [[ -n $nginx_pid ]]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
  if [[ ${KEEP_DIR:-0} == 1 ]]; then echo "kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# N distinct files (copies of one random file: one digest, N page-cache copies).
mkdir -p "$dir/root/w"
size=$(( SIZE_MIB * 1024 * 1024 ))
head -c "$size" /dev/urandom > "$dir/root/w/obj-0.wtns"
for (( i = 1; i < COUNT; i++ )); do cp "$dir/root/w/obj-0.wtns" "$dir/root/w/obj-$i.wtns"; done
sha256sum "$dir/root/w/obj-0.wtns" > "$dir/obj.sha256"
cat "$dir"/root/w/obj-*.wtns > /dev/null  # warm the page cache

sh "$repo/tests/unit/fetch/make_test_pki.sh" "$dir"
http=$(free_port); https=$(free_port); mtls=$(free_port)
WORKERS=$WORKERS sh "$repo/tests/unit/fetch/nginx_conf.sh" "$dir" "$dir/root" "$http" "$https" "$mtls"
env -u NGINX "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
nginx_pid=$!
for _ in $(seq 100); do
  if (exec 3<>/dev/tcp/127.0.0.1/$https) 2>/dev/null; then break; fi
  sleep 0.05
done

results=()
for scheme in $SCHEMES; do
  case $scheme in
    http)  url="http://127.0.0.1:$http/w/obj-{i}.wtns"; extra=() ;;
    https) url="https://127.0.0.1:$https/w/obj-{i}.wtns"; extra=(--ca "$dir/ca.crt") ;;
    file)  url="file://$dir/root/w/obj-{i}.wtns"; extra=() ;;
    *) echo "unknown scheme $scheme" >&2; exit 2 ;;
  esac
  for t in $THREADS; do
    line=$("$FETCH_BENCH" --url "$url" --count "$COUNT" --size "$size" --sha256-file "$dir/obj.sha256" \
           --threads "$t" --rounds "$ROUNDS" "${extra[@]}" $BENCH_ARGS) || { echo "$line"; cat "$dir/error.log" >&2; exit 1; }
    echo "$line"
    results+=("$line")
  done
done

echo
echo "fetch_bench: $COUNT x $SIZE_MIB MiB, $ROUNDS rounds, nginx $WORKERS workers, $cores cores ($(uname -n))"
printf '%-6s %7s %14s %s\n' scheme threads aggregate_GB/s per_stream_GB/s
for line in "${results[@]}"; do
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-6s %7d %14.2f %s" % (r["scheme"], r["threads"], r["aggregate_GBps"], " ".join("%.2f" % x for x in r["per_stream_GBps"])))' "$line"
done
