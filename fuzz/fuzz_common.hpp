// Shared by the fuzz targets: sanitizer defaults and the rule that a reader
// may only fail with a zkfleet::Error of an expected kind.
//
// Include from exactly one translation unit per fuzzer (it defines the
// sanitizers' default-option hooks).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#include "zkfleet/common/error.hpp"

// UBSan only prints by default; a fuzzer must stop on the first report, or
// undefined behaviour would never become a crash artifact. run.sh sets the
// same options, these make a hand-run fuzzer behave the same way.
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }

namespace zkfleet::fuzz {

// Aborts (a crash libFuzzer records) when `e` is not one of `allowed`: a
// reader that answers bad bytes with, say, kInternal has a bug.
inline void ExpectErrorCode(const Error& e, std::initializer_list<ErrorCode> allowed) {
  for (ErrorCode code : allowed) {
    if (e.code() == code) return;
  }
  std::fprintf(stderr, "unexpected error kind %s: %s\n", ErrorCodeName(e.code()), e.what());
  std::abort();
}

// Aborts with `what` when `ok` is false: a property of accepted input broke.
inline void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz check failed: %s\n", what);
    std::abort();
  }
}

}  // namespace zkfleet::fuzz
