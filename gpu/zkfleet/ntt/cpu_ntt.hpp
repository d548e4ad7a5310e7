// Radix-2 number-theoretic transforms over a scalar field Fr, with the exact
// conventions snarkjs uses (spec §8.2): natural order in and out,
//   forward: v[i] = sum_j a[j] w^(ij)      inverse: (1/n) sum_j a[j] w^(-ij)
// with w = 5^((r-1)/n), and the odd-coset step a[j] *= w_2n^j.
//
// An NttDomain precomputes its twiddles once (a loaded proving key keeps one)
// and is immutable afterwards: the transforms may run concurrently on
// different buffers.
#pragma once

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
  explicit NttDomain(int log_n) : NttDomain(log_n, Fr::root_of_unity(log_n)) {}
  // With another primitive 2^log_n-th root of unity w (bellperson's domains
  // use 7^((r-1)/n), bellman/domain.hpp); the odd coset stays snarkjs's.
  // `odd_coset` false: no table for ToOddCoset (bellperson's prover does its
  // coset steps itself; n fewer products at every key load).
  NttDomain(int log_n, const Fr& w, bool odd_coset = true) : log_n_(log_n), n_(size_t{1} << log_n) {
    const Fr w_inv = w.inverse();
    const size_t half = std::max<size_t>(1, n_ / 2);
    twiddles_.resize(half);
    inv_twiddles_.resize(half);
    Fr t = Fr::one(), ti = Fr::one();
    for (size_t j = 0; j < half; ++j) {
      twiddles_[j] = t;
      inv_twiddles_[j] = ti;
      t = t * w;
      ti = ti * w_inv;
    }
    n_inv_ = Fr::from_uint(n_).inverse();
    // Odd coset of the size-2n domain: x_i = w_2n * w_n^i. When n is the
    // largest power of two the field supports there is no w_2n and snarkjs
    // uses the shift 25 instead (spec §8.7; unreachable below 2^28).
    if (!odd_coset) return;
    Fr inc = Fr::root_of_unity(log_n + 1);  // zero when log_n + 1 exceeds the 2-adicity
    if (inc.is_zero()) inc = Fr::from_uint(25);
    coset_.resize(n_);
    Fr p = Fr::one();
    for (size_t j = 0; j < n_; ++j) {
      coset_[j] = p;
      p = p * inc;
    }
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
      for (size_t i = b; i < e; ++i) a[i] = a[i] * coset_[i] * n_inv_;
    });
    Transform(a, twiddles_, pool);
  }

 private:
  static size_t BitReverse(size_t x, int bits) {
    size_t r = 0;
    for (int i = 0; i < bits; ++i) {
      r = (r << 1) | (x & 1);
      x >>= 1;
    }
    return r;
  }

  // Decimation in time: bit-reverse, then log n butterfly stages.
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
    for (size_t len = 2; len <= n_; len <<= 1) {
      const size_t half = len / 2;
      const size_t stride = n_ / len;
      run(n_ / 2, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
          size_t block = t / half, j = t % half;
          size_t i0 = block * len + j, i1 = i0 + half;
          Fr v = a[i1] * tw[j * stride];
          Fr u = a[i0];
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
