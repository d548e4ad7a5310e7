#!/usr/bin/env bash
# Same-run A/B of two checkouts' brokers on tiny durable jobs (each tree's
# bench/fleet/run.sh on its own build: zkbroker + --instant workers +
# fleet_bench, closed-loop throughput), alternated ROUNDS times so that
# machine noise hits both alike.
#   bench/fleet/ab_broker.sh TREE_A TREE_B [ROUNDS]   (builds in TREE/$BUILD_SUBDIR, default build/cpu;
#                                                      JOBS, WORKERS, CLIENTS as in run.sh)
# Prints each run's jobs/s and broker CPU per job, then the medians and B/A.
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-3}
SUB=${BUILD_SUBDIR:-build/cpu}
export JOBS=${JOBS:-50000} RATES=${RATES:- }  # one space: no open-loop runs
declare -A TPUT CPU
for r in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    tree=${!side}
    build="$tree/$SUB"
    out=$(WITNESS_COUNT=0 "$tree/bench/fleet/run.sh" "$build" 2>&1) || echo "run failed: $(tail -n 3 <<<"$out")"
    jobs_s=$(grep '"label":"throughput"' <<<"$out" | grep -oP '"throughput_jobs_per_s":\K[0-9.]+' | head -1 || true)
    us=$(grep -oP 'broker CPU: .* = \K[0-9.]+(?= us per job)' <<<"$out" | head -1 || true)
    echo "round $r $side ($build): ${jobs_s:-?} jobs/s, ${us:-?} us broker CPU per job"
    TPUT[$side]+="${jobs_s:-0} "; CPU[$side]+="${us:-0} "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ma=$(median "${TPUT[A]}"); mb=$(median "${TPUT[B]}")
ca=$(median "${CPU[A]}"); cb=$(median "${CPU[B]}")
echo "median throughput: A $ma jobs/s, B $mb jobs/s, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN{printf "%.3f", b/a}')"
echo "median broker CPU per job: A $ca us, B $cb us, B/A $(awk -v a="$ca" -v b="$cb" 'BEGIN{printf "%.3f", b/a}')"
