// Radix-2 number-theoretic transforms over a scalar field Fr, with the exact
// conventions snarkjs uses (spec §8.2): natural order in and out,
//   forward: v[i] = sum_j a[j] w^(ij)      inverse: (1/n) sum_j a[j] w^(-ij)
// with w = 5^((r-1)/n), and the odd-coset step a[j] *= w_2n^j.
//
// An NttDomain precomputes its twiddles once (a loaded proving key keeps one)
// and is immutable afterwards: the transforms may run concurrently on
// different buffers.
#pragma once

#include <algorithm>
#include <array>
#include <stdexcept>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::cpu {

template <class Fr>
class NttDomain {
 public:
  explicit NttDomain(int log_n, ThreadPool* pool = nullptr) : NttDomain(log_n, Fr::root_of_unity(log_n), true, pool) {}
  // With another primitive 2^log_n-th root of unity w (bellperson's domains
  // use 7^((r-1)/n), bellman/domain.hpp); the odd coset stays snarkjs's.
  // `odd_coset` false: no table for ToOddCoset (bellperson's prover does its
  // coset steps itself; n fewer products at every key load).
  //
  // `pool`, where given, fills the tables in parallel (a key load's cost:
  // 2^k products in a chain on one thread otherwise).
  NttDomain(int log_n, const Fr& w, bool odd_coset = true, ThreadPool* pool = nullptr)
      : log_n_(log_n), n_(size_t{1} << log_n) {
    const size_t half = std::max<size_t>(1, n_ / 2);
    twiddles_.resize(half);
    inv_twiddles_.resize(half);
    FillPowers(twiddles_.data(), half, Fr::one(), w, pool);
    // w^(n/2) = -1, so w^-j = w^(n-j) = -w^(n/2-j): the inverse table is
    // the forward one reversed and negated, no second chain of products.
    inv_twiddles_[0] = Fr::one();
    ForRange(half, pool, [&](size_t lo, size_t hi) {
      for (size_t j = std::max<size_t>(lo, 1); j < hi; ++j) inv_twiddles_[j] = -twiddles_[half - j];
    });
    n_inv_ = Fr::from_uint(n_).inverse();
    // Odd coset of the size-2n domain: x_i = w_2n * w_n^i. When n is the
    // largest power of two the field supports there is no w_2n and snarkjs
    // uses the shift 25 instead (spec §8.7; unreachable below 2^28).
    if (!odd_coset) return;
    Fr inc = Fr::root_of_unity(log_n + 1);  // zero when log_n + 1 exceeds the 2-adicity
    if (inc.is_zero()) inc = Fr::from_uint(25);
    // The table holds inc^j / n: ToOddCoset's scaling folds in the iNTT's 1/n.
    coset_.resize(n_);
    FillPowers(coset_.data(), n_, n_inv_, inc, pool);
  }

  size_t size() const { return n_; }
  int log_size() const { return log_n_; }
  size_t resident_bytes() const { return (twiddles_.size() * 2 + coset_.size()) * sizeof(Fr); }

  void Forward(Fr* a, ThreadPool& pool) const { Transform(a, twiddles_, pool); }

  void Inverse(Fr* a, ThreadPool& pool) const {
    Transform(a, inv_twiddles_, pool);
    pool.ParallelFor(n_, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) a[i] = a[i] * n_inv_;
    });
  }

  // Evaluations on the domain -> evaluations on the odd coset: iNTT, then
  // a[j] *= inc^j / n in one pass (the 1/n of the iNTT folded in), then NTT.
  // Needs a domain built with odd_coset (the default).
  void ToOddCoset(Fr* a, ThreadPool& pool) const {
    if (coset_.size() != n_) throw std::logic_error("NttDomain::ToOddCoset on a domain built without its table");
    Transform(a, inv_twiddles_, pool);
    pool.ParallelFor(n_, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) a[i] = a[i] * coset_[i];  // inc^i / n
    });
    Transform(a, twiddles_, pool);
  }

 private:
  template <class Body>
  static void ForRange(size_t count, ThreadPool* pool, Body&& body) {
    if (pool && count >= (size_t{1} << 12)) {
      pool->ParallelFor(count, body);
    } else {
      body(size_t{0}, count);
    }
  }

  // out[j] = first · step^j for j < count: each range starts from its own
  // power (one exponentiation) and continues the chain.
  static void FillPowers(Fr* out, size_t count, const Fr& first, const Fr& step, ThreadPool* pool) {
    ForRange(count, pool, [&](size_t lo, size_t hi) {
      const uint64_t e[1] = {lo};
      Fr p = lo == 0 ? first : first * step.pow(e, 1);
      for (size_t j = lo; j < hi; ++j, p = p * step) out[j] = p;
    });
  }

  static size_t BitReverse(size_t x, int bits) {
    static constexpr auto kByte = [] {
      std::array<uint8_t, 256> table{};
      for (int v = 0; v < 256; ++v) {
        int r = 0;
        for (int bit = 0; bit < 8; ++bit) r |= ((v >> bit) & 1) << (7 - bit);
        table[v] = static_cast<uint8_t>(r);
      }
      return table;
    }();
    uint64_t r = 0;
    for (int byte = 0; byte < 8; ++byte) r = (r << 8) | kByte[(x >> (8 * byte)) & 0xff];
    return bits == 0 ? 0 : static_cast<size_t>(r >> (64 - bits));
  }

  // The butterflies of one group of a stage: x[j], x[j + half] with the
  // twiddle tw[j * stride]. j = 0 multiplies by w^0 = 1: skipped (in the
  // first stage that is every butterfly, in the second half of them).
  static void Butterflies(Fr* x, size_t half, const Fr* tw, size_t stride) {
    {
      const Fr u = x[0], v = x[half];
      x[0] = u + v;
      x[half] = u - v;
    }
    for (size_t j = 1; j < half; ++j) {
      const Fr v = x[j + half] * tw[j * stride];
      const Fr u = x[j];
      x[j] = u + v;
      x[j + half] = u - v;
    }
  }

  // Elements whose first stages run while they are in cache: 2^11 of 32
  // bytes = 64 KiB, a core's L2 share.
  static constexpr int kLogBlock = 11;

  // Decimation in time: bit-reverse, then log n butterfly stages. The stages
  // whose groups fit in a block of 2^kLogBlock run block by block (each
  // block through all of them while it is in cache, the blocks in
  // parallel); the wider stages then run over the whole array.
  void Transform(Fr* a, const std::vector<Fr>& tw, ThreadPool& pool) const {
    if (n_ <= 1) return;
    const bool parallel = n_ >= (size_t{1} << 12);
    auto run = [&](size_t count, auto&& body) {
      if (parallel) pool.ParallelFor(count, body);
      else body(0, count);
    };
    run(n_, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) {
        size_t j = BitReverse(i, log_n_);
        if (i < j) std::swap(a[i], a[j]);
      }
    });
    const int log_block = std::min(log_n_, kLogBlock);
    const size_t block = size_t{1} << log_block;
    run(n_ / block, [&](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        Fr* x = a + k * block;
        for (int s = 1; s <= log_block; ++s) {
          const size_t len = size_t{1} << s;
          for (size_t i0 = 0; i0 < block; i0 += len) Butterflies(x + i0, len / 2, tw.data(), n_ >> s);
        }
      }
    });
    for (int s = log_block + 1; s <= log_n_; ++s) {
      const size_t half = size_t{1} << (s - 1);
      const size_t stride = n_ >> s;
      run(n_ / 2, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
          const size_t j = t & (half - 1);
          const size_t i0 = ((t >> (s - 1)) << s) + j, i1 = i0 + half;
          const Fr v = a[i1] * tw[j * stride];
          const Fr u = a[i0];
          a[i0] = u + v;
          a[i1] = u - v;
        }
      });
    }
  }

  int log_n_;
  size_t n_;
  std::vector<Fr> twiddles_;      // w^j, j < n/2
  std::vector<Fr> inv_twiddles_;  // w^-j, j < n/2
  std::vector<Fr> coset_;         // inc^j, j < n
  Fr n_inv_;
};

}  // namespace zkfleet::cpu
