// Straight-line runs of constant copies in wasm2c's output, rolled into
// table-driven loops before the generator is compiled.
//
// circom materialises a constant array that a template or function takes as
// a parameter (circomlib's Poseidon: MixS copies all 285 S constants of its
// width on every run, POSEIDON_C/S/M/P return theirs element by element) as
// one Fr_copy per element, each a 7-line wasm2c statement:
//
//     w2c_i0 = K;  w2c_i1 = SIZE;  w2c_i0 *= w2c_i1;  w2c_i1 = w2c_BASE;
//     w2c_i0 += w2c_i1;  w2c_i1 = SRC;  w2c_Fr_copy(instance, w2c_i0, w2c_i1);
//
// (one per line, K, SIZE, SRC literals, BASE a local). A Poseidon-heavy
// circuit is mostly such code: 4.2 M copies per witness of a 256-hash chain,
// two thirds of its time, the instruction cache missing on megabytes of
// straight-line calls, and cc spending its minutes on the same lines.
//
// RollConstantCopies replaces every run of at least `min_run` such statements
// (same indentation, SIZE and BASE) by a static table of segments {K, SRC, n}
// (n consecutive Ks whose SRCs step by SIZE) and one call of
// zkf_copy_run(instance, table, segments, SIZE, w2c_BASE), then sets w2c_i0
// and w2c_i1 to what the run's last statement left in them. The copies happen
// in the same order with the same u32 arithmetic: zkf_copy_run (appended at
// the end of the file) calls w2c_Fr_copy per element, unless the native field
// code defines ZKF_NATIVE_COPY_SEGMENT (native_fr.c: a segment copied without
// a call per element when its ranges are inside the memory and apart).
//
// Not thread-safe across calls on the same string; no state. Returns the
// number of statements rolled (0: `c_source` unchanged, also when wasm2c's
// forward declaration of w2c_Fr_copy, where the helper is declared, is absent).
#pragma once

#include <cstddef>
#include <string>

namespace zkfleet::witgen {

inline constexpr size_t kMinCopyRun = 8;

size_t RollConstantCopies(std::string& c_source, size_t min_run = kMinCopyRun);

}  // namespace zkfleet::witgen
