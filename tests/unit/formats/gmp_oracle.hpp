// GMP as an independent oracle: decodes little-endian (Montgomery) field
// elements to decimal, without sharing code with the engine's field classes.
#pragma once

#include <gmp.h>

#include <cstdint>
#include <string>

namespace zkfleet::io::testing {

class Mpz {
 public:
  Mpz() { mpz_init(v_); }
  ~Mpz() { mpz_clear(v_); }
  Mpz(const Mpz&) = delete;
  Mpz& operator=(const Mpz&) = delete;
  mpz_t& get() { return v_; }
  std::string Decimal() {
    char* s = mpz_get_str(nullptr, 10, v_);
    std::string out(s);
    void (*free_fn)(void*, size_t);
    mp_get_memory_functions(nullptr, nullptr, &free_fn);
    free_fn(s, out.size() + 1);
    return out;
  }

 private:
  mpz_t v_;
};

inline void ImportLe(mpz_t out, const uint8_t* bytes, size_t n) { mpz_import(out, n, -1, 1, 0, 0, bytes); }

// Decimal value of the Montgomery-form element `bytes` (n8 bytes LE) modulo
// `prime` (n8 bytes LE): bytes * 2^(-8*n8) mod prime.
inline std::string MontgomeryToDecimal(const uint8_t* bytes, const uint8_t* prime, size_t n8) {
  Mpz x, p, r_inv;
  ImportLe(x.get(), bytes, n8);
  ImportLe(p.get(), prime, n8);
  mpz_set_ui(r_inv.get(), 1);
  mpz_mul_2exp(r_inv.get(), r_inv.get(), 8 * n8);
  mpz_invert(r_inv.get(), r_inv.get(), p.get());
  mpz_mul(x.get(), x.get(), r_inv.get());
  mpz_mod(x.get(), x.get(), p.get());
  return x.Decimal();
}

inline std::string LeToDecimal(const uint8_t* bytes, size_t n) {
  Mpz x;
  ImportLe(x.get(), bytes, n);
  return x.Decimal();
}

}  // namespace zkfleet::io::testing
