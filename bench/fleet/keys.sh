# Sourced by the fleet and GPU benchmark scripts: CURVE keys for one
# throw-away fleet (the default; SECURITY=plaintext runs without).
#   make_fleet_keys DIR ZKCTL
# writes DIR/{broker,worker,client}.{pub,secret} and DIR/allow/{workers,clients}
# and sets three arrays of command-line options:
#   BROKER_SECURITY  for zkbroker   WORKER_SECURITY  for zkworker
#   CLIENT_SECURITY  for zkctl and fleet_bench (the client key is an admin)
make_fleet_keys() {
  local dir=$1 zkctl=$2
  if [[ "${SECURITY:-curve}" == plaintext ]]; then
    BROKER_SECURITY=(--insecure-plaintext)
    WORKER_SECURITY=(--insecure-plaintext)
    CLIENT_SECURITY=(--insecure-plaintext)
    return
  fi
  mkdir -p "$dir/allow/workers" "$dir/allow/clients"
  for name in broker worker client; do "$zkctl" keygen --out "$dir/$name" >/dev/null; done
  cp "$dir/worker.pub" "$dir/allow/workers/worker.pub"
  { cat "$dir/client.pub"; echo "role = admin"; } >"$dir/allow/clients/client.pub"
  BROKER_SECURITY=(--curve-secret-key "$dir/broker.secret" --allow-dir "$dir/allow")
  WORKER_SECURITY=(--curve-secret-key "$dir/worker.secret" --broker-public-key "$dir/broker.pub")
  CLIENT_SECURITY=(--curve-secret-key "$dir/client.secret" --broker-public-key "$dir/broker.pub")
}

# has_flag PROGRAM FLAG: whether PROGRAM's --help lists FLAG (an older build
# may lack it). The whole --help is read first: grep -q leaving a pipe early
# would fail it (SIGPIPE under pipefail).
has_flag() {
  grep -q -- "$2" <<<"$("$1" --help 2>/dev/null)"
}

# The flags a broker needs to serve circuit CIRCUIT in a benchmark (issue 27:
# the broker verifies every RESULT against the circuit's verification key):
#   broker_check_args BROKER CIRCUIT [VK_JSON]
# sets BROKER_CHECK to --verification-key CIRCUIT=VK_JSON when a key is
# given, else to --unverified-circuits CIRCUIT (workers that do not prove,
# zkworker --instant) with the credit cap raised to the benchmarks' deep
# worker queues (--capacity 2000). Empty for a broker older than issue 27.
broker_check_args() {
  local broker=$1 circuit=$2 vk=${3:-}
  BROKER_CHECK=()
  has_flag "$broker" --unverified-circuits || return 0
  if [[ -n "$vk" ]]; then
    BROKER_CHECK=(--verification-key "$circuit=$vk")
  else
    BROKER_CHECK=(--unverified-circuits "$circuit" --max-credit-per-worker 2000)
  fi
}
