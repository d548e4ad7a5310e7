// V8 witness-generation bench: the in-process cost of a circom witness in node, as snarkjs
// computes it (circom_runtime's WitnessCalculatorBuilder + calculateWTNSBin), without the process
// start, the wasm compile and the file writes that `snarkjs wtns calculate` adds.
//
// usage (from the repo root): node bench/witgen/v8_bench.cjs WASM INPUT_DIR N
//   loads WASM once, then computes N witnesses on the first N inputs of INPUT_DIR (sorted
//   *.json; bench/witgen/make_inputs.py writes them; inputs are reused round-robin if fewer),
//   drops the first (warm-up) and prints one JSON line with per-witness ms (best, median, mean).
"use strict";
const fs = require("fs");
const path = require("path");

function findRuntime() {
    const root = path.resolve(__dirname, "..", "..", "node_modules");
    for (const p of [path.join(root, "circom_runtime"), path.join(root, "snarkjs", "node_modules", "circom_runtime")]) {
        if (fs.existsSync(path.join(p, "package.json"))) return p;
    }
    throw new Error("circom_runtime not found under " + root);
}

async function main() {
    const [wasmFile, inputDir, nArg] = process.argv.slice(2);
    if (!wasmFile || !inputDir || !nArg) {
        console.error("usage: node bench/witgen/v8_bench.cjs WASM INPUT_DIR N");
        process.exit(2);
    }
    const n = parseInt(nArg, 10);
    const rtDir = findRuntime();
    const rtVersion = JSON.parse(fs.readFileSync(path.join(rtDir, "package.json"))).version;
    const { WitnessCalculatorBuilder } = require(rtDir);

    const files = fs.readdirSync(inputDir).filter((f) => f.endsWith(".json")).sort();
    if (files.length === 0) throw new Error("no *.json in " + inputDir);
    const inputs = [];
    for (let i = 0; i < n; i++) {
        inputs.push(JSON.parse(fs.readFileSync(path.join(inputDir, files[i % files.length]))));
    }

    const t0 = process.hrtime.bigint();
    const wc = await WitnessCalculatorBuilder(fs.readFileSync(wasmFile), {});
    const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;

    const times = [];
    let bytes = 0;
    for (let i = 0; i < n; i++) {
        const s = process.hrtime.bigint();
        const wtns = await wc.calculateWTNSBin(inputs[i], 0);
        times.push(Number(process.hrtime.bigint() - s) / 1e6);
        bytes = wtns.length;
    }
    const measured = times.slice(1);
    const sorted = [...measured].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    const median = sorted.length === 0 ? null
        : sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    const r = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
    console.log(JSON.stringify({
        wasm: wasmFile, n_witnesses: n, measured: measured.length, distinct_inputs: Math.min(n, files.length),
        circom_runtime: rtVersion, node: process.version,
        load_ms: r(loadMs), warmup_ms: r(times[0]),
        best_ms: r(sorted[0] ?? null), median_ms: r(median),
        mean_ms: r(measured.length ? measured.reduce((a, b) => a + b, 0) / measured.length : null),
        wtns_bytes: bytes,
    }));
}

main().catch((e) => { console.error(e); process.exit(1); });
