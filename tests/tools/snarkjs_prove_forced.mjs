// snarkjs groth16 prove with the blinding scalars r and s forced (spec §12),
// so that a native prover given the same r and s can be compared bit for bit.
//   node snarkjs_prove_forced.mjs <bn128|bls12381> <zkey> <wtns> <r decimal> <s decimal> <proof.json out>
// snarkjs draws r then s with curve.Fr.random() on the cached curve object
// and treats the bytes as Montgomery form, so we return x*2^256 mod r.
import { buildBn128, buildBls12381 } from "ffjavascript";
import * as snarkjs from "snarkjs";
import fs from "fs";

const [, , curveName, zkeyFile, wtnsFile, rDec, sDec, outFile] = process.argv;
const curve = curveName === "bls12381" ? await buildBls12381() : await buildBn128();
const r = curve.r;
const R = (1n << 256n) % r;
const toLE = (x) => { const b = new Uint8Array(32); for (let i = 0; i < 32; i++) { b[i] = Number(x & 0xffn); x >>= 8n; } return b; };
const seq = [BigInt(rDec) * R % r, BigInt(sDec) * R % r];
let k = 0;
curve.Fr.random = () => toLE(seq[k++ % 2]);
const { proof } = await snarkjs.groth16.prove(zkeyFile, wtnsFile);
fs.writeFileSync(outFile, JSON.stringify(proof, null, 1));
await curve.terminate();
process.exit(0);
