// GMP as an independent oracle for the devtools tests: arithmetic mod a prime
// on mpz_class values, sharing no code with the engine's field templates.
#pragma once

#include <gmpxx.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace zkfleet::devtools::testing {

inline mpz_class FromLe(const uint8_t* bytes, size_t n) {
  mpz_class x;
  mpz_import(x.get_mpz_t(), n, -1, 1, 0, 0, bytes);
  return x;
}

inline std::vector<uint8_t> ToLe(const mpz_class& x, size_t n) {
  std::vector<uint8_t> out(n, 0);
  size_t written = 0;
  mpz_export(out.data(), &written, -1, 1, 0, 0, x.get_mpz_t());
  return out;
}

class GmpField {
 public:
  explicit GmpField(mpz_class p) : p_(std::move(p)) {}
  const mpz_class& p() const { return p_; }

  mpz_class Mod(const mpz_class& x) const {
    mpz_class r = x % p_;
    if (r < 0) r += p_;
    return r;
  }
  mpz_class Mul(const mpz_class& a, const mpz_class& b) const { return Mod(a * b); }
  mpz_class Pow(const mpz_class& b, const mpz_class& e) const {
    mpz_class r;
    mpz_powm(r.get_mpz_t(), b.get_mpz_t(), e.get_mpz_t(), p_.get_mpz_t());
    return r;
  }
  mpz_class Inv(const mpz_class& a) const {
    mpz_class r;
    mpz_invert(r.get_mpz_t(), Mod(a).get_mpz_t(), p_.get_mpz_t());
    return r;
  }
  // w[k] = 5^((p-1)/2^k): the roots of unity snarkjs uses (spec §1.2).
  mpz_class Root(int k) const {
    mpz_class e = (p_ - 1) >> k;
    return Pow(5, e);
  }

 private:
  mpz_class p_;
};

}  // namespace zkfleet::devtools::testing
