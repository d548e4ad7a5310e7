// Verifies many Groth16 proofs with snarkjs's own verifier in one node
// process (the CLI costs ~0.5 s per call).
//   node snarkjs_verify_batch.mjs <cases.json> <results.json>
// cases.json: [{"vk": path, "public": path, "proof": path}, ...]
// results.json: [{"ok": bool, "error": string}, ...] in the same order; a
// case whose files snarkjs cannot even read (or that makes it throw) counts
// as not verified, with the exception's message in "error".
import * as snarkjs from "snarkjs";
import fs from "fs";

const [, , casesFile, outFile] = process.argv;
const cases = JSON.parse(fs.readFileSync(casesFile, "utf8"));
const results = [];
for (const c of cases) {
  try {
    const vk = JSON.parse(fs.readFileSync(c.vk, "utf8"));
    const pub = JSON.parse(fs.readFileSync(c.public, "utf8"));
    const proof = JSON.parse(fs.readFileSync(c.proof, "utf8"));
    const ok = await snarkjs.groth16.verify(vk, pub, proof);
    results.push({ ok: ok === true, error: "" });
  } catch (e) {
    results.push({ ok: false, error: String(e && e.message ? e.message : e) });
  }
}
fs.writeFileSync(outFile, JSON.stringify(results));
// snarkjs keeps worker threads for the curves alive; do not wait for them.
process.exit(0);
