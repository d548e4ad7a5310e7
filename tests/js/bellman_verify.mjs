#!/usr/bin/env node
// An independent verifier ("oracle") for bellperson-format BLS12-381 Groth16
// proofs, built on @noble/curves (pinned in package.json; installed by
// scripts/install-deps.sh). It shares no code with zkfleet's prover.
//
//   node tests/js/bellman_verify.mjs --vk FILE.vk --proof FILE.proof [--inputs FILE.json]
//
// Formats (bellperson src/groth16/{verifying_key,proof}.rs, zcash/blstrs point
// encoding):
//   .vk    alpha_g1 (G1 uncompressed, 96 B) | beta_g1 (96) | beta_g2 (G2
//          uncompressed, 192 B) | gamma_g2 (192) | delta_g1 (96) | delta_g2
//          (192) | u32 big-endian IC count | IC points (G1 uncompressed, 96 B
//          each). IC[0] goes with the constant one. Nothing may follow.
//   .proof A (G1 compressed, 48) | B (G2 compressed, 96) | C (G1 compressed,
//          48) = 192 bytes; k*192 bytes are k partition proofs, each checked
//          against the same vk with its own inputs.
//   inputs JSON: an array of decimal strings (one proof), or an array of
//          arrays, one per partition; without the constant one, so each has
//          IC count - 1 elements. Omitting --inputs means no public inputs.
//
// Checks, as bellperson's readers and verifier do, and a little stricter:
// exact sizes; canonical encodings (flag bits, coordinates < p, the sort bit
// naming the right y, an all-zero point at infinity); every point on the
// curve and in the prime-order subgroup (noble's Point.fromBytes runs
// assertValidity: the curve equation and isTorsionFree); no point at infinity
// in the proof or the IC (bellperson refuses those) nor in the vk points the
// equation uses (alpha_g1, beta_g2, gamma_g2, delta_g2); beta_g1 and delta_g1
// are decoded and checked but may be the point at infinity (the verifier does
// not use them); inputs < r; the input count equal to IC count - 1.
//
// Equation: e(A,B) == e(alpha,beta) * e(IC0 + sum x_i IC_{i+1}, gamma) * e(C,delta),
// checked as one multi-pairing (one final exponentiation):
//   e(A,B) * e(-alpha,beta) * e(-L,gamma) * e(-C,delta) == 1.
//
// Exit status: 0 all partitions valid ("valid" on stdout); 1 a proof does not
// verify ("invalid: partition N[, M...]" on stdout); 2 malformed input (the
// reason on stderr); 3 the oracle cannot run (@noble/curves missing: run
// scripts/install-deps.sh) or an internal error.
//
// Importable: `import { verifyFiles, verifyBytes, ... } from "./bellman_verify.mjs"`.

import { readFileSync, realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

export const G1_UNCOMPRESSED = 96;
export const G2_UNCOMPRESSED = 192;
export const G1_COMPRESSED = 48;
export const G2_COMPRESSED = 96;
export const PROOF_BYTES = 2 * G1_COMPRESSED + G2_COMPRESSED; // 192
export const VK_FIXED_BYTES = 3 * G1_UNCOMPRESSED + 3 * G2_UNCOMPRESSED + 4; // 868

/** Input that is not a well-formed vk, proof or inputs file (exit 2). */
export class MalformedError extends Error {
  constructor(message) {
    super(message);
    this.name = "MalformedError";
  }
}

/** The oracle cannot run: its dependency is missing (exit 3). */
export class DependencyError extends Error {
  constructor(message) {
    super(message);
    this.name = "DependencyError";
  }
}

let bls = null;
let loadError = null;
try {
  ({ bls12_381: bls } = await import("@noble/curves/bls12-381"));
} catch (e) {
  loadError = e;
}

function noble() {
  if (!bls) {
    throw new DependencyError(
      "@noble/curves is not installed (" + (loadError && loadError.message) +
        "); run scripts/install-deps.sh (npm ci) in the repository root");
  }
  return bls;
}

function bytesToBigInt(b) {
  let n = 0n;
  for (const x of b) n = (n << 8n) | BigInt(x);
  return n;
}

function hex(b) {
  return Buffer.from(b).toString("hex");
}

// zcash/blstrs: y is "lexicographically largest" when y > (p-1)/2; in Fp2 the
// c1 coordinate decides unless it is zero.
function fpLargest(y, p) {
  return y > (p - 1n) / 2n;
}
function fp2Largest(y, p) {
  return y.c1 !== 0n ? fpLargest(y.c1, p) : fpLargest(y.c0, p);
}

/**
 * Decodes one point in the zcash/blstrs encoding used by bellperson.
 * group: "G1" | "G2"; compressed: which encoding is expected. Throws
 * MalformedError naming `what` when the bytes are not a canonical encoding of
 * a point of the prime-order subgroup.
 */
export function decodePoint(bytes, group, compressed, what) {
  const B = noble();
  const Fp = B.fields.Fp;
  const p = Fp.ORDER;
  const L = Fp.BYTES; // 48
  const coords = (group === "G1" ? 1 : 2) * (compressed ? 1 : 2);
  const size = coords * L;
  if (bytes.length !== size) {
    throw new MalformedError(`${what}: expected ${size} bytes, got ${bytes.length}`);
  }
  const flagC = (bytes[0] & 0x80) !== 0;
  const flagI = (bytes[0] & 0x40) !== 0;
  const flagS = (bytes[0] & 0x20) !== 0;
  if (flagC !== compressed) {
    throw new MalformedError(`${what}: the compression flag is ${flagC ? "set" : "clear"}, expected ${compressed ? "compressed" : "uncompressed"}`);
  }
  const body = Uint8Array.from(bytes);
  body[0] &= 0x1f;
  const Curve = group === "G1" ? B.G1 : B.G2;
  const Point = Curve.Point || Curve.ProjectivePoint;
  if (flagI) {
    if (flagS || body.some((x) => x !== 0)) {
      throw new MalformedError(`${what}: a non-canonical point at infinity`);
    }
    return Point.ZERO;
  }
  if (!compressed && flagS) {
    throw new MalformedError(`${what}: the sort flag is set in an uncompressed point`);
  }
  for (let i = 0; i < coords; i++) {
    if (bytesToBigInt(body.subarray(i * L, (i + 1) * L)) >= p) {
      throw new MalformedError(`${what}: coordinate ${i} is not reduced modulo p`);
    }
  }
  let P;
  try {
    P = Point.fromBytes(Uint8Array.from(bytes)); // on the curve and torsion-free (assertValidity)
  } catch (e) {
    throw new MalformedError(`${what}: not a valid ${group} point (${e.message})`);
  }
  if (compressed) {
    // Pick the y the sort flag names ourselves rather than trust the library's
    // convention; -P is in the subgroup when P is.
    const { y } = P.toAffine();
    const largest = group === "G1" ? fpLargest(y, p) : fp2Largest(y, p);
    if (largest !== flagS) P = P.negate();
  }
  // Belt and braces: the canonical re-encoding must be the input.
  if (hex(P.toBytes(compressed)) !== hex(bytes)) {
    throw new MalformedError(`${what}: not a canonical encoding`);
  }
  return P;
}

/** Parses a bellperson .vk (see the header). */
export function parseVerifyingKey(bytes) {
  if (bytes.length < VK_FIXED_BYTES) {
    throw new MalformedError(`vk: ${bytes.length} bytes, shorter than the ${VK_FIXED_BYTES} before the IC points`);
  }
  let off = 0;
  const take = (n) => {
    const s = bytes.subarray(off, off + n);
    off += n;
    return s;
  };
  const vk = {};
  vk.alpha_g1 = decodePoint(take(G1_UNCOMPRESSED), "G1", false, "vk alpha_g1");
  vk.beta_g1 = decodePoint(take(G1_UNCOMPRESSED), "G1", false, "vk beta_g1");
  vk.beta_g2 = decodePoint(take(G2_UNCOMPRESSED), "G2", false, "vk beta_g2");
  vk.gamma_g2 = decodePoint(take(G2_UNCOMPRESSED), "G2", false, "vk gamma_g2");
  vk.delta_g1 = decodePoint(take(G1_UNCOMPRESSED), "G1", false, "vk delta_g1");
  vk.delta_g2 = decodePoint(take(G2_UNCOMPRESSED), "G2", false, "vk delta_g2");
  for (const k of ["alpha_g1", "beta_g2", "gamma_g2", "delta_g2"]) {
    if (vk[k].is0()) throw new MalformedError(`vk ${k}: the point at infinity`);
  }
  const count = new DataView(bytes.buffer, bytes.byteOffset + off, 4).getUint32(0, false);
  off += 4;
  if (count < 1) throw new MalformedError("vk: IC count 0 (IC[0], for the constant one, is required)");
  const expected = VK_FIXED_BYTES + count * G1_UNCOMPRESSED;
  if (bytes.length !== expected) {
    throw new MalformedError(`vk: IC count ${count} means ${expected} bytes, the file has ${bytes.length}`);
  }
  vk.ic = [];
  for (let i = 0; i < count; i++) {
    const P = decodePoint(take(G1_UNCOMPRESSED), "G1", false, `vk IC[${i}]`);
    if (P.is0()) throw new MalformedError(`vk IC[${i}]: the point at infinity`);
    vk.ic.push(P);
  }
  return vk;
}

/** Parses k*192 bytes into k proofs {a, b, c}. */
export function parseProofs(bytes) {
  if (bytes.length === 0 || bytes.length % PROOF_BYTES !== 0) {
    throw new MalformedError(`proof: ${bytes.length} bytes, not a positive multiple of ${PROOF_BYTES}`);
  }
  const proofs = [];
  for (let k = 0; k * PROOF_BYTES < bytes.length; k++) {
    const o = k * PROOF_BYTES;
    const a = decodePoint(bytes.subarray(o, o + 48), "G1", true, `proof ${k} A`);
    const b = decodePoint(bytes.subarray(o + 48, o + 144), "G2", true, `proof ${k} B`);
    const c = decodePoint(bytes.subarray(o + 144, o + 192), "G1", true, `proof ${k} C`);
    for (const [n, P] of [["A", a], ["B", b], ["C", c]]) {
      if (P.is0()) throw new MalformedError(`proof ${k} ${n}: the point at infinity`);
    }
    proofs.push({ a, b, c });
  }
  return proofs;
}

function parseScalar(v, what) {
  const r = noble().fields.Fr.ORDER;
  let n;
  if (typeof v === "string" && /^[0-9]+$/.test(v)) {
    n = BigInt(v);
  } else if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) {
    n = BigInt(v);
  } else {
    throw new MalformedError(`${what}: ${JSON.stringify(v)} is not a decimal string of a non-negative integer`);
  }
  if (n >= r) throw new MalformedError(`${what}: ${v} is not below the scalar field order r`);
  return n;
}

/**
 * Parsed inputs JSON (or undefined: no inputs) -> one array of bigints per
 * partition, each checked against the vk's IC count.
 */
export function parseInputs(json, partitions, icCount) {
  const want = icCount - 1;
  let lists;
  if (json === undefined) {
    lists = Array.from({ length: partitions }, () => []);
  } else if (!Array.isArray(json)) {
    throw new MalformedError("inputs: expected a JSON array");
  } else if (json.length > 0 && json.every(Array.isArray)) {
    lists = json;
  } else if (json.some(Array.isArray)) {
    throw new MalformedError("inputs: mixes arrays and scalars");
  } else if (partitions === 1) {
    lists = [json];
  } else if (json.length === 0 && want === 0) {
    lists = Array.from({ length: partitions }, () => []);
  } else {
    throw new MalformedError(`inputs: ${partitions} proofs need an array of ${partitions} arrays`);
  }
  if (lists.length !== partitions) {
    throw new MalformedError(`inputs: ${lists.length} input lists for ${partitions} proofs`);
  }
  return lists.map((list, k) => {
    if (list.length !== want) {
      throw new MalformedError(`inputs: partition ${k} has ${list.length} inputs, the vk takes ${want} (IC count ${icCount} - 1)`);
    }
    return list.map((v, i) => parseScalar(v, `inputs: partition ${k} input ${i}`));
  });
}

/** The Groth16 equation for one proof; true when it holds. */
export function verifyOne(vk, proof, inputs) {
  const B = noble();
  if (inputs.length + 1 !== vk.ic.length) {
    throw new MalformedError(`${inputs.length} inputs for IC count ${vk.ic.length}`);
  }
  let L = vk.ic[0];
  inputs.forEach((x, i) => {
    if (x !== 0n) L = L.add(vk.ic[i + 1].multiply(x));
  });
  const pairs = [
    { g1: proof.a, g2: proof.b },
    { g1: vk.alpha_g1.negate(), g2: vk.beta_g2 },
    { g1: L.negate(), g2: vk.gamma_g2 },
    { g1: proof.c.negate(), g2: vk.delta_g2 },
  ].filter(({ g1 }) => !g1.is0()); // e(O, Q) = 1; noble refuses O in a pairing
  const Fp12 = B.fields.Fp12;
  return Fp12.eql(B.pairingBatch(pairs), Fp12.ONE);
}

/**
 * Verifies every partition. vkBytes, proofBytes: Uint8Array; inputsJson:
 * parsed JSON or undefined. Returns { valid: boolean, partitions: k,
 * invalid: [indices] }; throws MalformedError or DependencyError.
 */
export function verifyBytes(vkBytes, proofBytes, inputsJson) {
  const vk = parseVerifyingKey(vkBytes);
  const proofs = parseProofs(proofBytes);
  const inputs = parseInputs(inputsJson, proofs.length, vk.ic.length);
  const invalid = [];
  proofs.forEach((proof, k) => {
    if (!verifyOne(vk, proof, inputs[k])) invalid.push(k);
  });
  return { valid: invalid.length === 0, partitions: proofs.length, invalid };
}

function readBytes(path, what) {
  try {
    const b = readFileSync(path);
    return new Uint8Array(b.buffer, b.byteOffset, b.length);
  } catch (e) {
    throw new MalformedError(`${what} ${path}: ${e.message}`);
  }
}

/** verifyBytes on files; inputsPath may be undefined. */
export function verifyFiles(vkPath, proofPath, inputsPath) {
  noble();
  const vk = readBytes(vkPath, "vk");
  const proof = readBytes(proofPath, "proof");
  let inputs;
  if (inputsPath !== undefined) {
    const text = Buffer.from(readBytes(inputsPath, "inputs")).toString("utf8");
    try {
      inputs = JSON.parse(text);
    } catch (e) {
      throw new MalformedError(`inputs ${inputsPath}: not JSON (${e.message})`);
    }
  }
  return verifyBytes(vk, proof, inputs);
}

const USAGE = "usage: node tests/js/bellman_verify.mjs --vk FILE.vk --proof FILE.proof [--inputs FILE.json]";

/** The CLI; returns the exit status. */
export function main(argv, out = process.stdout, err = process.stderr) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-h" || a === "--help") {
      out.write(USAGE + "\n");
      return 0;
    }
    const m = /^--(vk|proof|inputs)(?:=(.*))?$/.exec(a);
    if (!m) {
      err.write(`bellman_verify: unknown argument ${a}\n${USAGE}\n`);
      return 2;
    }
    let v = m[2];
    if (v === undefined) {
      if (i + 1 >= argv.length) {
        err.write(`bellman_verify: --${m[1]} needs a value\n${USAGE}\n`);
        return 2;
      }
      v = argv[++i];
    }
    if (opts[m[1]] !== undefined) {
      err.write(`bellman_verify: --${m[1]} given twice\n`);
      return 2;
    }
    opts[m[1]] = v;
  }
  if (opts.vk === undefined || opts.proof === undefined) {
    err.write(`bellman_verify: --vk and --proof are required\n${USAGE}\n`);
    return 2;
  }
  try {
    const r = verifyFiles(opts.vk, opts.proof, opts.inputs);
    if (r.valid) {
      out.write(r.partitions === 1 ? "valid\n" : `valid (${r.partitions} partitions)\n`);
      return 0;
    }
    out.write(`invalid: partition ${r.invalid.join(", ")} of ${r.partitions}\n`);
    return 1;
  } catch (e) {
    if (e instanceof MalformedError) {
      err.write(`bellman_verify: malformed: ${e.message}\n`);
      return 2;
    }
    if (e instanceof DependencyError) {
      err.write(`bellman_verify: ${e.message}\n`);
      return 3;
    }
    err.write(`bellman_verify: internal error: ${e && e.stack ? e.stack : e}\n`);
    return 3;
  }
}

function isMain() {
  if (!process.argv[1]) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  process.exitCode = main(process.argv.slice(2));
}
