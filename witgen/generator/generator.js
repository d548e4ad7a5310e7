// The witness generator's first-sight tier: the same program as driver.c
// (read that file's header for the protocol, the exit statuses and the
// messages), run by Node.js on circom's circuit.wasm as it is, so that a
// circuit never seen gets its witness while the native generator compiles
// (witness_generator.cpp starts both). V8 compiles the wasm in well under a
// second where the C compiler takes seconds to minutes.
//
//   node -e <this file> -- [--describe] [--memory-bytes B] [--repeat N]
//
// stdin: u32 wasm_bytes, the wasm (the very bytes the parent hashed), then,
// unless --describe, the "ZKWI" request. stdout: the --describe line
// (native=0) or the .wtns, byte for byte what circom_runtime's
// calculateWTNSBin writes. The CPU and memory limits are set on this process
// by the parent (prlimit), as driver.c sets its own.
'use strict';
const fs = require('fs');

const kExitOk = 0, kExitBadInput = 2, kExitCircuit = 3, kExitRequest = 4, kExitMemory = 5;

function fail(status, message) {
  try { fs.writeSync(2, 'error: ' + message + '\n'); } catch (e) { /* stderr gone: the status still tells */ }
  process.exit(status);
}

function writeAll(fd, bytes) {
  let at = 0;
  while (at < bytes.length) {
    try {
      at += fs.writeSync(fd, bytes, at, bytes.length - at);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;  // a non-blocking pipe that is full: the parent reads it
      fail(kExitRequest, 'cannot write the witness: ' + e.message);
    }
  }
}

const exceptionTexts = {
  1: 'Signal not found.', 2: 'Too many signals set.', 3: 'Signal already set.', 4: 'Assert Failed.',
  5: 'Not enough memory.', 6: 'Input signal array access exceeds the size.',
};

function fnv1a64(bytes) {
  let h = 0xCBF29CE484222325n;
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * 0x100000001B3n) & 0xFFFFFFFFFFFFFFFFn;
  }
  return [Number(h >> 32n), Number(h & 0xFFFFFFFFn)];
}

function main() {
  const args = process.argv.slice(1).filter((a) => a !== '--');
  let describe = false, memoryBytes = 0, repeat = 1;
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--describe') describe = true;
    else if (args[i] === '--memory-bytes' && i + 1 < args.length) memoryBytes = Number(args[++i]);
    else if (args[i] === '--repeat' && i + 1 < args.length) repeat = Math.max(1, Number(args[++i]));
    else fail(kExitRequest, 'unknown argument ' + args[i]);
  }
  try { fs.writeFileSync('/proc/self/oom_score_adj', '1000'); } catch (e) { /* as driver.c: best effort */ }

  let input;
  try { input = fs.readFileSync(0); } catch (e) { fail(kExitRequest, 'cannot read the request: ' + e.message); }
  let at = 0;
  const u32 = () => {
    if (input.length - at < 4) fail(kExitRequest, 'truncated request');
    const v = input.readUInt32LE(at);
    at += 4;
    return v;
  };
  const take = (n) => {
    if (input.length - at < n) fail(kExitRequest, 'truncated request');
    const bytes = input.subarray(at, at + n);
    at += n;
    return bytes;
  };
  const wasm = take(u32());

  const state = { exceptionCode: 0, errors: '', logged: 0 };
  let exports = null;
  const message = () => {
    let text = '';
    for (let i = 0; i < 4096; ++i) {
      const c = exports.getMessageChar();
      if (c === 0) break;
      text += String.fromCharCode(c);
    }
    return text;
  };
  const runtime = {
    exceptionHandler(code) {
      state.exceptionCode = code === 0 ? 0xffffffff : code;
      throw new Error('circuit exception ' + code);  // unwinds the wasm, as circom_runtime's throw does
    },
    printErrorMessage() { state.errors += message() + '\n'; },
    writeBufferMessage() {  // the circuit's log(): to stderr, at most 64 KiB per witness
      const line = message();
      if (state.logged + line.length + 8 > 65536) return;
      state.logged += line.length + 8;
      fs.writeSync(2, 'log: ' + line + '\n');
    },
    showSharedRWMemory() {},
    // older circom runtimes' imports: accepted, unused
    error() {}, log() {}, logGetSignal() {}, logSetSignal() {}, logStartComponent() {}, logFinishComponent() {},
  };
  let instance;
  try {
    instance = new WebAssembly.Instance(new WebAssembly.Module(wasm), { runtime });
  } catch (e) {
    fail(kExitCircuit, 'the circuit\'s code trapped while loading: ' + e.message);
  }
  exports = instance.exports;
  const memory = exports.memory;
  const failTrapped = (e, during) => {
    const size = memory ? memory.buffer.byteLength : 0;
    if (state.exceptionCode === 5 || (memoryBytes && size + (64 << 20) >= memoryBytes && state.exceptionCode === 0)) {
      fail(kExitMemory, `the generator reached its memory limit (${size >>> 20} MiB of wasm memory, limit ` +
                        `${Math.floor(memoryBytes / 1048576)} MiB) ${during}`);
    }
    if (state.exceptionCode !== 0) {
      const errors = state.errors.replace(/\n+$/, '');
      fail(kExitCircuit, (exceptionTexts[state.exceptionCode] || 'Unknown error.') + (errors ? '\n' + errors : ''));
    }
    fail(kExitCircuit, `the circuit's code trapped ${during}: ${e.message}`);
  };

  const n32 = exports.getFieldNumLen32();
  if (n32 === 0 || n32 > 64) fail(kExitCircuit, `the circuit's field has ${n32} 32-bit words (1..64 supported)`);
  exports.getRawPrime();
  const prime = new Uint32Array(n32);
  for (let j = 0; j < n32; ++j) prime[j] = exports.readSharedRWMemory(j);
  const witnessCount = exports.getWitnessSize() >>> 0;
  const inputCount = exports.getInputSize() >>> 0;

  if (describe) {
    let hex = '';
    for (let j = n32; j-- > 0;) hex += prime[j].toString(16).padStart(8, '0');
    const version = `${exports.getVersion()}.${exports.getMinorVersion()}.${exports.getPatchVersion()}`;
    writeAll(1, Buffer.from(`zkfleet-generator 1 n32=${n32} witness=${witnessCount} inputs=${inputCount} native=0 ` +
                            `version=${version} prime=${hex}\n`));
    process.exit(kExitOk);
  }

  if (take(4).toString('latin1') !== 'ZKWI') fail(kExitRequest, 'not a generator request');
  if (u32() !== 1) fail(kExitRequest, 'unknown request version');
  if (u32() !== n32) fail(kExitRequest, 'request for a field of another size');
  const signals = u32();
  const firstSignal = at;

  const n8 = 4 * n32;
  const total = 12 + 12 + 4 + n8 + 4 + 12 + n8 * witnessCount;
  const out = Buffer.alloc(total);
  const seconds = [];
  for (let round = 0; round < repeat; ++round) {
    const t0 = process.hrtime.bigint();
    let pos = 0;
    try {
      exports.init(0);
      let set = 0;
      at = firstSignal;
      for (let s = 0; s < signals; ++s) {
        const name = take(u32());
        const count = u32();
        const values = take(count * n8);
        const [msb, lsb] = fnv1a64(name);
        const size = exports.getInputSignalSize(msb, lsb) | 0;
        const text = name.toString('utf8');
        if (size < 0) fail(kExitBadInput, `Signal ${text} not found`);
        if (count < size) fail(kExitBadInput, `Not enough values for input signal ${text}`);
        if (count > size) fail(kExitBadInput, `Too many values for input signal ${text}`);
        for (let i = 0; i < count; ++i) {
          for (let j = 0; j < n32; ++j) exports.writeSharedRWMemory(j, values.readUInt32LE(i * n8 + 4 * j));
          exports.setInputSignal(msb, lsb, i);
          ++set;
        }
      }
      if (set < inputCount) fail(kExitBadInput, `Not all inputs have been set. Only ${set} out of ${inputCount}`);
      // circom_runtime's calculateWTNSBin layout: wtns v2, two sections.
      out.write('wtns', 0, 'latin1');
      const head = [2, 2, 1, 8 + n8, 0, n8];
      pos = 4;
      for (const v of head) { out.writeUInt32LE(v, pos); pos += 4; }
      for (let j = 0; j < n32; ++j) { out.writeUInt32LE(prime[j], pos); pos += 4; }
      const section2 = n8 * witnessCount;
      out.writeUInt32LE(witnessCount, pos); pos += 4;
      out.writeUInt32LE(2, pos); pos += 4;
      out.writeUInt32LE(section2 % 4294967296, pos); pos += 4;
      out.writeUInt32LE(Math.floor(section2 / 4294967296), pos); pos += 4;
      for (let i = 0; i < witnessCount; ++i) {
        exports.getWitness(i);
        for (let j = 0; j < n32; ++j) { out.writeUInt32LE(exports.readSharedRWMemory(j) >>> 0, pos); pos += 4; }
      }
    } catch (e) {
      failTrapped(e, 'while computing the witness');
    }
    seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  if (repeat > 1) {
    seconds.sort((a, b) => a - b);
    const mean = seconds.reduce((a, b) => a + b, 0) / repeat;
    fs.writeSync(2, JSON.stringify({ witnesses: repeat, best_ms: seconds[0] * 1e3,
                                      median_ms: seconds[Math.floor(repeat / 2)] * 1e3, mean_ms: mean * 1e3,
                                      native: 0, native_readout: 0 }) + '\n');
  }
  writeAll(1, out);
  process.exit(kExitOk);
}

main();
