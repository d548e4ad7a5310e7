#!/usr/bin/env bash
# Real circomlib circuits (bn128) for the CPU prover benchmarks, each in a
# directory that bench/cpu/zkprove_vs_rapidsnark.sh takes as it is
# (circuit.zkey + witness.wtns):
#
#   sha256_1block      circomlib Sha256(440): one 512-bit block (440 message bits
#                      + 1 + 64 length bits = 505 <= 512); 31,264 constraints, domain 2^15
#   sha256_2block      circomlib Sha256(952): two blocks; 62,528 constraints, domain 2^16
#                      (Sha256(448) is already two blocks: 448 + 65 > 512)
#   eddsa_poseidon_x8  8 x circomlib EdDSAPoseidonVerifier, enabled = 1, 8 real
#                      signatures (distinct keys, nonces and messages, signed here
#                      in Python); 64,688 constraints, domain 2^16
#   poseidon2_chain256 a Merkle-path-like chain of 256 circomlib Poseidon(2):
#                      h = Poseidon(h, in[i]); 132,352 constraints (62,208
#                      non-linear), 132,610 wires, domain 2^18 (not in the
#                      default set)
#
#   bench/cpu/make_real_circuits.sh OUT_DIR [NAME ...]      (default: the first three)
#
# Per circuit, in OUT_DIR/<name>/: circuit.circom, input.json, circuit.r1cs,
# circuit.wasm, circuit.sym, circuit.zkey (zkfleet-dev setup --insecure --seed 7:
# a TEST key, no ptau, reproducible), verification_key.json (snarkjs zkey export
# verificationkey), witness.wtns (snarkjs wtns calculate), and a check: a zkprove
# proof (--backend cpu) and, when RAPIDSNARK is set, a rapidsnark proof, each
# verified by snarkjs groth16 verify (proof_zkprove.json, proof_rapidsnark.json).
# The SHA-256 outputs in the witness are compared with Python's hashlib, the
# signatures are verified in Python before the circuit sees them.
#
# Idempotent: a step runs only when its output is missing or older than what it
# is made from (circuit.circom and input.json are rewritten only when their
# content changes); the checks run every time. Compiled with the repository's
# pinned circom2 (circom 2.2.3, default simplification --O1, like
# tests/fixtures/witgen/make_fixtures.sh) against the pinned circomlib 2.0.5,
# which is copied into OUT_DIR/lib (circom2 runs under WASI: it follows no
# symlinks and sees only the parents of its working directory).
#
# Environment: ZKFLEET_DEV, ZKPROVE (default: build/release/cmd/...), RAPIDSNARK
# (optional: rapidsnark's prover, to check its proofs too). Needs node, python3.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [sha256_1block|sha256_2block|eddsa_poseidon_x8 ...]" >&2; exit 2; }
OUT="$1"; shift
mkdir -p "$OUT"; OUT="$(cd "$OUT" && pwd)"
NAMES=("$@"); [ ${#NAMES[@]} -gt 0 ] || NAMES=(sha256_1block sha256_2block eddsa_poseidon_x8)

CIRCOM2="$ROOT/node_modules/.bin/circom2"
SNARKJS="$ROOT/node_modules/.bin/snarkjs"
ZKFLEET_DEV="${ZKFLEET_DEV:-$ROOT/build/release/cmd/zkfleet-dev/zkfleet-dev}"
ZKPROVE="${ZKPROVE:-$ROOT/build/release/cmd/zkprove/zkprove}"
RAPIDSNARK="${RAPIDSNARK:-}"
for t in "$CIRCOM2" "$SNARKJS" "$ZKFLEET_DEV" "$ZKPROVE"; do
  [ -x "$t" ] || { echo "missing $t (npm ci in the repo root; scripts/build.sh)" >&2; exit 1; }
done
[ -d "$ROOT/node_modules/circomlib/circuits" ] || { echo "missing node_modules/circomlib (npm ci)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 1; }

stale() {  # stale OUTPUT INPUT... : true when OUTPUT is missing or older than an INPUT
  local out=$1; shift
  [ -e "$out" ] || return 0
  local i; for i in "$@"; do [ "$i" -nt "$out" ] && return 0; done
  return 1
}
put() {  # put FILE: stdin into FILE, only when the content differs (keeps the mtime otherwise)
  local tmp; tmp="$(mktemp)"; cat >"$tmp"
  if [ -f "$1" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; else chmod 644 "$tmp"; mv "$tmp" "$1"; fi
}

# circomlib, where circom2 can read it.
if [ ! -f "$OUT/lib/circomlib/.copied" ] ||
   ! diff -rq "$ROOT/node_modules/circomlib/circuits" "$OUT/lib/circomlib/circuits" >/dev/null 2>&1; then
  rm -rf "$OUT/lib/circomlib"; mkdir -p "$OUT/lib/circomlib"
  cp -r "$ROOT/node_modules/circomlib/circuits" "$ROOT/node_modules/circomlib/package.json" "$OUT/lib/circomlib/"
  touch "$OUT/lib/circomlib/.copied"
fi

compile() {  # compile DIR: circuit.circom -> circuit.r1cs, circuit.wasm, circuit.sym
  local d=$1
  if stale "$d/circuit.r1cs" "$d/circuit.circom" || stale "$d/circuit.wasm" "$d/circuit.circom"; then
    rm -rf "$d/build"; mkdir -p "$d/build"
    # From OUT_DIR, with relative paths only: circom2 (WASI) resolves neither "../lib" nor symlinks.
    (cd "$OUT" && "$CIRCOM2" "$(basename "$d")/circuit.circom" --r1cs --wasm --sym --prime bn128 -l lib \
       -o "$(basename "$d")/build") >"$d/compile.log" 2>&1 ||
      { cat "$d/compile.log" >&2; exit 1; }
    mv "$d/build/circuit.r1cs" "$d/build/circuit.sym" "$d/"
    mv "$d/build/circuit_js/circuit.wasm" "$d/"
    rm -rf "$d/build"
  fi
}

# Baby Jubjub (circomlib's twisted Edwards form) for the EdDSA snippets below:
# P, the subgroup order L, B8, add(p, q), mul(k, p).
PY_BABYJUB='
P = 21888242871839275222246405745257275088548364400416034343698204186575808495617
L = 2736030358979909402780800718157159386076813972158567259200215660948447373041
A_, D_ = 168700, 168696
B8 = (5299619240641551281634865583518297030282874472190772894086521144482721001553,
      16950150798460657717958625567821834550301663161624707787222815936182638968203)
def add(p, q):
    (x1, y1), (x2, y2) = p, q
    t = D_ * x1 * x2 * y1 * y2 % P
    return ((x1 * y2 + y1 * x2) * pow(1 + t, P - 2, P) % P, (y1 * y2 - A_ * x1 * x2) * pow(1 - t, P - 2, P) % P)
def mul(k, p):
    r = (0, 1)
    while k:
        if k & 1: r = add(r, p)
        p = add(p, p); k >>= 1
    return r
'

# wtns reader shared by the Python snippets below: prints nothing, defines wtns_values(path).
PY_WTNS='
import struct
def wtns_values(path):
    data = open(path, "rb").read()
    assert data[:4] == b"wtns", path
    _ver, nsec = struct.unpack_from("<II", data, 4)
    pos, n8, nw, vals = 12, None, None, None
    for _ in range(nsec):
        st, sz = struct.unpack_from("<IQ", data, pos); pos += 12
        if st == 1:
            (n8,) = struct.unpack_from("<I", data, pos)
            (nw,) = struct.unpack_from("<I", data, pos + 4 + n8)
        elif st == 2:
            vals = [int.from_bytes(data[pos + i * n8:pos + (i + 1) * n8], "little") for i in range(nw)]
        pos += sz
    return vals
'

write_sha256() {  # write_sha256 DIR NBITS
  local d=$1 nbits=$2
  mkdir -p "$d"
  printf 'pragma circom 2.0.0;\n// circomlib Sha256(%s) (npm circomlib 2.0.5), written by bench/cpu/make_real_circuits.sh\ninclude "circomlib/circuits/sha256/sha256.circom";\ncomponent main = Sha256(%s);\n' \
    "$nbits" "$nbits" | put "$d/circuit.circom"
  # The message: NBITS/8 bytes of a fixed text, bits most significant first (circomlib's order).
  python3 - "$nbits" <<'EOF' | put "$d/input.json"
import json, sys
n = int(sys.argv[1]); nbytes = n // 8
text = (b"zkfleet CPU benchmark: circomlib SHA-256 on real input. " * 8)[:nbytes]
bits = [(b >> (7 - i)) & 1 for b in text for i in range(8)]
print(json.dumps({"in": bits}))
EOF
}

check_sha256() {  # the circuit's output (witness signals 1..256) = hashlib's digest
  local d=$1 nbits=$2
  python3 - "$d/witness.wtns" "$nbits" <<EOF
$PY_WTNS
import hashlib, sys
vals = wtns_values(sys.argv[1]); n = int(sys.argv[2])
text = (b"zkfleet CPU benchmark: circomlib SHA-256 on real input. " * 8)[:n // 8]
want = hashlib.sha256(text).digest()
got = bytes(int("".join(str(v) for v in vals[1 + 8 * i:9 + 8 * i]), 2) for i in range(32))
assert got == want, (got.hex(), want.hex())
print("  sha256 output matches hashlib:", want.hex())
EOF
}

write_eddsa() {  # write_eddsa DIR N: N EdDSA-Poseidon verifiers on N real signatures
  local d=$1 n=$2
  mkdir -p "$d" "$OUT/poseidon5_x$n"
  cat <<EOF | put "$d/circuit.circom"
pragma circom 2.0.0;
// $n x circomlib EdDSAPoseidonVerifier (npm circomlib 2.0.5), enabled = 1, written by
// bench/cpu/make_real_circuits.sh
include "circomlib/circuits/eddsaposeidon.circom";
template EdDSAPoseidonBatch(n) {
    signal input Ax[n]; signal input Ay[n]; signal input S[n];
    signal input R8x[n]; signal input R8y[n]; signal input M[n];
    component v[n];
    for (var i = 0; i < n; i++) {
        v[i] = EdDSAPoseidonVerifier();
        v[i].enabled <== 1;
        v[i].Ax <== Ax[i]; v[i].Ay <== Ay[i]; v[i].S <== S[i];
        v[i].R8x <== R8x[i]; v[i].R8y <== R8y[i]; v[i].M <== M[i];
    }
}
component main {public [Ax, Ay, M]} = EdDSAPoseidonBatch($n);
EOF
  # The message hash hm = Poseidon(R8x, R8y, Ax, Ay, M) comes from circomlib's own
  # Poseidon(5), run through a helper circuit (no JS signing library needed).
  local h="$OUT/poseidon5_x$n"
  cat <<EOF | put "$h/circuit.circom"
pragma circom 2.0.0;
include "circomlib/circuits/poseidon.circom";
template Poseidon5Batch(n) {
    signal input in[n][5]; signal output out[n];
    component p[n];
    for (var i = 0; i < n; i++) { p[i] = Poseidon(5); for (var j = 0; j < 5; j++) p[i].inputs[j] <== in[i][j]; out[i] <== p[i].out; }
}
component main = Poseidon5Batch($n);
EOF
  compile "$h"
  # Keys, nonces, messages: deterministic (SHA-256 of fixed labels).
  python3 - "$n" "$h/input.json" "$d/sigs.json" <<EOF
$PY_WTNS
$PY_BABYJUB
import hashlib, json, sys
def h(label, mod): return int.from_bytes(hashlib.sha256(label.encode()).digest(), "big") % mod
n = int(sys.argv[1]); sigs = []
for i in range(n):
    k = h(f"zkfleet bench eddsa key {i}", L - 1) + 1      # A = k * B8; signing scalar s = 8k
    r = h(f"zkfleet bench eddsa nonce {i}", L - 1) + 1
    m = h(f"zkfleet bench eddsa message {i}", P)
    A, R8 = mul(k, B8), mul(r, B8)
    sigs.append({"k": k, "r": r, "M": m, "A": A, "R8": R8})
json.dump({"in": [[str(s["R8"][0]), str(s["R8"][1]), str(s["A"][0]), str(s["A"][1]), str(s["M"])] for s in sigs]},
          open(sys.argv[2] + ".tmp", "w"))
json.dump([{k: (list(v) if isinstance(v, tuple) else v) for k, v in s.items()} for s in sigs], open(sys.argv[3] + ".tmp", "w"))
EOF
  for f in "$h/input.json" "$d/sigs.json"; do put "$f" <"$f.tmp"; rm -f "$f.tmp"; done
  if stale "$h/witness.wtns" "$h/circuit.wasm" "$h/input.json"; then
    "$SNARKJS" wtns calculate "$h/circuit.wasm" "$h/input.json" "$h/witness.wtns" >/dev/null
  fi
  python3 - "$d/sigs.json" "$h/witness.wtns" <<EOF | put "$d/input.json"
$PY_WTNS
$PY_BABYJUB
import json, sys
sigs = json.load(open(sys.argv[1])); hm = wtns_values(sys.argv[2])[1:1 + len(sigs)]
inp = {k: [] for k in ("Ax", "Ay", "S", "R8x", "R8y", "M")}
for s, e in zip(sigs, hm):
    S = (s["r"] + 8 * e * s["k"]) % L          # circomlib: S = r + hm * s, s = 8k
    A, R8 = tuple(s["A"]), tuple(s["R8"])
    # The verifier's equation: S * B8 == R8 + 8 * hm * A
    assert mul(S, B8) == add(R8, mul(8 * e, A)), "bad signature"
    for key, v in (("Ax", A[0]), ("Ay", A[1]), ("S", S), ("R8x", R8[0]), ("R8y", R8[1]), ("M", s["M"])):
        inp[key].append(str(v))
print(json.dumps(inp))
EOF
}

write_poseidon_chain() {  # write_poseidon_chain DIR N
  local d=$1 n=$2
  mkdir -p "$d"
  cat <<EOF | put "$d/circuit.circom"
pragma circom 2.0.0;
// bench/cpu/make_real_circuits.sh: a Merkle-path-like chain, h = Poseidon(h, in[i])
include "circomlib/circuits/poseidon.circom";
template Chain(n) {
    signal input seed; signal input in[n]; signal output out;
    component p[n];
    for (var i = 0; i < n; i++) {
        p[i] = Poseidon(2);
        p[i].inputs[0] <== i == 0 ? seed : p[i - 1].out;
        p[i].inputs[1] <== in[i];
    }
    out <== p[n - 1].out;
}
component main = Chain($n);
EOF
  python3 - "$n" <<'EOF' | put "$d/input.json"
import hashlib, json, sys
P = 21888242871839275222246405745257275088548364400416034343698204186575808495617
v = lambda k: str(int.from_bytes(hashlib.sha256(b"zkfleet bench poseidon chain %d" % k).digest(), "big") % P)
print(json.dumps({"seed": v(-1), "in": [v(k) for k in range(int(sys.argv[1]))]}))
EOF
}

verify() {  # verify DIR PROOF PUBLIC LABEL
  local d=$1
  if "$SNARKJS" groth16 verify "$d/verification_key.json" "$3" "$2" 2>&1 | grep -q "OK!"; then
    echo "  $4 proof: snarkjs groth16 verify OK"
  else
    echo "  $4 proof: snarkjs groth16 verify FAILED" >&2; exit 1
  fi
}

for name in "${NAMES[@]}"; do
  d="$OUT/$name"
  echo "== $name"
  case "$name" in
    sha256_1block) write_sha256 "$d" 440 ;;
    sha256_2block) write_sha256 "$d" 952 ;;
    eddsa_poseidon_x8) write_eddsa "$d" 8 ;;
    poseidon2_chain256) write_poseidon_chain "$d" 256 ;;
    *) echo "unknown circuit $name" >&2; exit 2 ;;
  esac
  compile "$d"
  python3 "$ROOT/bench/witgen/r1cs_info.py" "$d/circuit.r1cs" | sed 's/^/  /'
  if stale "$d/circuit.zkey" "$d/circuit.r1cs"; then
    "$ZKFLEET_DEV" setup "$d/circuit.r1cs" "$d/circuit.zkey.tmp" --insecure --seed 7 >"$d/setup.log" 2>&1 ||
      { cat "$d/setup.log" >&2; exit 1; }
    mv "$d/circuit.zkey.tmp" "$d/circuit.zkey"
  fi
  if stale "$d/verification_key.json" "$d/circuit.zkey"; then
    "$SNARKJS" zkey export verificationkey "$d/circuit.zkey" "$d/verification_key.json" >/dev/null
  fi
  if stale "$d/witness.wtns" "$d/circuit.wasm" "$d/input.json"; then
    "$SNARKJS" wtns calculate "$d/circuit.wasm" "$d/input.json" "$d/witness.wtns"
  fi
  case "$name" in sha256_1block) check_sha256 "$d" 440 ;; sha256_2block) check_sha256 "$d" 952 ;; esac
  # zkprove with a cache of its own (the user's key-check cache untouched).
  ZKFLEET_KEY_CHECK_CACHE="$d/.check-cache" \
    "$ZKPROVE" "$d/circuit.zkey" "$d/witness.wtns" "$d/proof_zkprove.json" "$d/public_zkprove.json" --backend cpu
  verify "$d" "$d/proof_zkprove.json" "$d/public_zkprove.json" zkprove
  if [ -n "$RAPIDSNARK" ]; then
    "$RAPIDSNARK" "$d/circuit.zkey" "$d/witness.wtns" "$d/proof_rapidsnark.json" "$d/public_rapidsnark.json"
    verify "$d" "$d/proof_rapidsnark.json" "$d/public_rapidsnark.json" rapidsnark
    cmp -s <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])))' "$d/public_zkprove.json") \
           <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])))' "$d/public_rapidsnark.json") ||
      { echo "  public signals differ between zkprove and rapidsnark" >&2; exit 1; }
  fi
done
