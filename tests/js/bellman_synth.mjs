#!/usr/bin/env node
// Writes a synthetic bellperson-format verifying key and k partition proofs
// that satisfy the Groth16 equation, made with known trapdoor scalars (a
// "simulated" proof: no circuit behind it). For testing the oracle
// (bellman_verify.mjs) on multi-partition files and on tampering; it proves
// nothing about any prover.
//
//   node tests/js/bellman_synth.mjs --out DIR [--inputs N] [--partitions K] [--seed S]
//
// Writes DIR/synth.vk, DIR/synth.proof (K*192 bytes), DIR/synth.inputs.json
// (an array of K arrays of N decimal strings). Deterministic in S.
//
// With scalars alpha, beta, gamma, delta, s_0..s_N (IC_i = s_i*G1), inputs x
// and random a, b: A = a*G1, B = b*G2, C = c*G1 where
// c = (a*b - alpha*beta - gamma*(s_0 + sum x_i s_i)) / delta (mod r).

import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bls12_381 as B } from "@noble/curves/bls12-381";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const out = opt("out");
if (!out) {
  console.error("usage: bellman_synth.mjs --out DIR [--inputs N] [--partitions K] [--seed S]");
  process.exit(2);
}
const nInputs = Number(opt("inputs", "3"));
const partitions = Number(opt("partitions", "2"));
const seed = opt("seed", "zkfleet");

const Fr = B.fields.Fr;
let counter = 0;
function scalar() {
  // Deterministic, nonzero, < r: 64 bytes of SHA-256 output reduced mod r.
  for (;;) {
    const h = Buffer.concat([0, 1].map((j) =>
      createHash("sha256").update(`${seed}/${counter}/${j}`).digest()));
    counter++;
    const n = Fr.create(BigInt("0x" + h.toString("hex")));
    if (n !== 0n) return n;
  }
}

const G1 = (B.G1.Point || B.G1.ProjectivePoint).BASE;
const G2 = (B.G2.Point || B.G2.ProjectivePoint).BASE;
const alpha = scalar(), beta = scalar(), gamma = scalar(), delta = scalar();
const s = Array.from({ length: nInputs + 1 }, scalar);

const u32be = (n) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const vk = Buffer.concat([
  G1.multiply(alpha).toBytes(false),
  G1.multiply(beta).toBytes(false),
  G2.multiply(beta).toBytes(false),
  G2.multiply(gamma).toBytes(false),
  G1.multiply(delta).toBytes(false),
  G2.multiply(delta).toBytes(false),
  u32be(s.length),
  ...s.map((si) => G1.multiply(si).toBytes(false)),
]);

const proofs = [];
const inputs = [];
for (let k = 0; k < partitions; k++) {
  const x = Array.from({ length: nInputs }, scalar);
  let l = s[0];
  x.forEach((xi, i) => { l = Fr.add(l, Fr.mul(xi, s[i + 1])); });
  const a = scalar(), b = scalar();
  const c = Fr.div(Fr.sub(Fr.sub(Fr.mul(a, b), Fr.mul(alpha, beta)), Fr.mul(gamma, l)), delta);
  if (c === 0n) throw new Error("degenerate C; pick another seed");
  proofs.push(G1.multiply(a).toBytes(true), G2.multiply(b).toBytes(true), G1.multiply(c).toBytes(true));
  inputs.push(x.map(String));
}

mkdirSync(out, { recursive: true });
writeFileSync(join(out, "synth.vk"), vk);
writeFileSync(join(out, "synth.proof"), Buffer.concat(proofs));
writeFileSync(join(out, "synth.inputs.json"), JSON.stringify(inputs) + "\n");
console.log(`wrote ${out}/synth.{vk,proof,inputs.json}: ${partitions} partitions, ${nInputs} inputs`);
