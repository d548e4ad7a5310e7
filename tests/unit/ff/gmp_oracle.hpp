// GMP helpers for the field and curve tests: GMP is the independent oracle
// that every Fp/Fp2 result is compared against.
#pragma once

#include <gmp.h>

#include <cstdint>
#include <random>
#include <string>

namespace zkfleet::testing {

// Owning wrapper around mpz_t (the C++ gmpxx library is not linked).
class Mpz {
 public:
  Mpz() { mpz_init(v_); }
  explicit Mpz(unsigned long x) { mpz_init_set_ui(v_, x); }
  // Decimal, or hex with a 0x prefix.
  explicit Mpz(const std::string& text) {
    mpz_init(v_);
    if (mpz_set_str(v_, text.c_str(), 0) != 0) mpz_set_si(v_, -1);  // tests then fail loudly
  }
  Mpz(const Mpz& o) { mpz_init_set(v_, o.v_); }
  Mpz& operator=(const Mpz& o) {
    mpz_set(v_, o.v_);
    return *this;
  }
  ~Mpz() { mpz_clear(v_); }

  mpz_ptr get() { return v_; }
  mpz_srcptr get() const { return v_; }

  bool operator==(const Mpz& o) const { return mpz_cmp(v_, o.v_) == 0; }
  bool operator!=(const Mpz& o) const { return !(*this == o); }
  std::string hex() const {
    char* s = mpz_get_str(nullptr, 16, v_);
    std::string out = std::string("0x") + s;
    void (*free_fn)(void*, size_t);
    mp_get_memory_functions(nullptr, nullptr, &free_fn);
    free_fn(s, out.size() - 1);
    return out;
  }

 private:
  mpz_t v_;
};

inline Mpz from_limbs(const uint64_t* limbs, int n) {
  Mpz r;
  mpz_import(r.get(), n, -1, sizeof(uint64_t), 0, 0, limbs);
  return r;
}

// Writes x (0 <= x < 2^(64n)) as n little-endian limbs.
inline void to_limbs(const Mpz& x, uint64_t* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = 0;
  size_t count = 0;
  if (mpz_sizeinbase(x.get(), 2) > static_cast<size_t>(64 * n) || mpz_sgn(x.get()) < 0) {
    for (int i = 0; i < n; ++i) out[i] = 0xdeadbeefdeadbeefULL;  // makes the caller's check fail
    return;
  }
  mpz_export(out, &count, -1, sizeof(uint64_t), 0, 0, x.get());
}

inline Mpz mod(const Mpz& x, const Mpz& m) {
  Mpz r;
  mpz_mod(r.get(), x.get(), m.get());
  return r;
}
inline Mpz add_mod(const Mpz& a, const Mpz& b, const Mpz& m) {
  Mpz r;
  mpz_add(r.get(), a.get(), b.get());
  return mod(r, m);
}
inline Mpz sub_mod(const Mpz& a, const Mpz& b, const Mpz& m) {
  Mpz r;
  mpz_sub(r.get(), a.get(), b.get());
  return mod(r, m);
}
inline Mpz mul_mod(const Mpz& a, const Mpz& b, const Mpz& m) {
  Mpz r;
  mpz_mul(r.get(), a.get(), b.get());
  return mod(r, m);
}
inline Mpz pow2(unsigned long bits) {
  Mpz r;
  mpz_ui_pow_ui(r.get(), 2, bits);
  return r;
}

// Uniform-ish random integer with n random limbs (not reduced).
inline Mpz random_limbs(std::mt19937_64& rng, int n) {
  uint64_t limbs[16];
  for (int i = 0; i < n; ++i) limbs[i] = rng();
  return from_limbs(limbs, n);
}

}  // namespace zkfleet::testing
