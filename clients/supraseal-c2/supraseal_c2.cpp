// libzkfleet_supraseal_c2.so: supraseal-c2's C ABI over engine::BellmanKey,
// so that a bellperson/rust-fil-proofs build linked against supraseal-c2
// (the `supraseal-c2` crate's extern "C" declarations) proves with zkfleet's
// engine instead. The ABI is that of supranational/supra_seal at commit
// c2ff1acf282dad86812c62f5f431db545d966743 (README.md next to this file):
//
//   c2/cuda/groth16_srs.cuh   create_SRS, evict_SRS, drop_SRS, clone_SRS
//   c2/cuda/groth16_cuda.cu   generate_groth16_proofs_c, Assignment<fr_t>,
//                             groth16_proof
//   c2/src/lib.rs             the Rust side: SRS { ptr }, &SRS for the C++
//                             references, cuda::Error = sppark's RustError
//
// Semantics kept: an SRS value is a handle; clone_SRS gives another handle
// to the same loaded parameters, drop_SRS releases one (the parameters go
// with the last handle and the cache's reference); create_SRS with
// cache = true shares parameters by path through a process-wide cache of at
// most four entries, least recently used first out; evict_SRS removes the
// handle's path from that cache. r_s and s_s are Montgomery scalars and the
// proofs affine points with Montgomery Fp limbs (Fp2 as c0, c1; the point
// at infinity all zero), as sppark's types lay them out.
//
// Differences: the backend is ZKFLEET_BACKEND (cpu | cuda | auto, default
// auto) read at each create_SRS; calls to generate_groth16_proofs_c run
// concurrently (supraseal-c2 serialises them with a mutex; BellmanKey::Prove
// is thread-safe); every proof is verified before it is written, and the
// proofs are written only when every circuit of the call proved (an error
// leaves proofs[] untouched); sizes that do not match the parameters are
// errors, not assertions. Errors never escape as C++ exceptions: they come
// back as RustError { code != 0, message } with the message from strdup,
// which the caller frees with free() (sppark's convention: its Rust Error
// frees it on drop; supraseal-c2 builds with TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE).
// Codes are errno values: EINVAL bad arguments or assignments, ENOENT a
// missing file, EIO I/O and internal errors, ENOMEM out of memory, ENODEV
// a CUDA failure, ENOTSUP an unsupported request.
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/proving_key.hpp"

#define ZKFLEET_SUPRASEAL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

namespace engine = zkfleet::engine;
using zkfleet::Error;
using zkfleet::ErrorCode;

}  // namespace

// ---- The ABI's types (the C declarations in tests/c/supraseal_abi_test.c match) ----

extern "C" {

// sppark util/rusterror.h: returned by value; `message` is strdup'ed, the
// caller frees it.
struct RustError {
  int code;
  char* message;
};

// lib.rs: #[repr(C)] pub struct SRS { ptr: *const c_void }. Here ptr is a
// Handle (below) or null.
struct SRS {
  const void* ptr;
};

// blst/sppark field elements: little-endian u64 limbs, Montgomery form.
struct fr_t {
  uint64_t limb[4];
};
struct fp_t {
  uint64_t limb[6];
};
struct fp2_t {
  fp_t c0, c1;
};
struct affine_t {
  fp_t x, y;
};
struct affine_fp2_t {
  fp2_t x, y;
};
struct groth16_proof {
  affine_t a;
  affine_fp2_t b;
  affine_t c;
};

// groth16_cuda.cu's Assignment<fr_t> (lib.rs: Assignment<Scalar>).
struct Assignment {
  const uint64_t* a_aux_density;
  size_t a_aux_bit_len;
  size_t a_aux_popcount;

  const uint64_t* b_inp_density;
  size_t b_inp_bit_len;
  size_t b_inp_popcount;

  const uint64_t* b_aux_density;
  size_t b_aux_bit_len;
  size_t b_aux_popcount;

  const fr_t* a;
  const fr_t* b;
  const fr_t* c;
  size_t abc_size;

  const fr_t* inp_assignment_data;
  size_t inp_assignment_size;

  const fr_t* aux_assignment_data;
  size_t aux_assignment_size;
};

}  // extern "C"

static_assert(sizeof(RustError) == 16);
static_assert(sizeof(SRS) == sizeof(void*));
static_assert(sizeof(fr_t) == sizeof(engine::FrMont) && alignof(fr_t) == alignof(engine::FrMont));
static_assert(sizeof(fp_t) == sizeof(engine::FqMont));
static_assert(sizeof(groth16_proof) == 96 + 192 + 96);  // G1, G2, G1 affine, 48-byte coordinates
static_assert(sizeof(Assignment) == 17 * 8);

namespace {

// What an SRS points at: one reference to the loaded parameters. Each handle
// is its own allocation, so drop_SRS deletes exactly the handle it is given.
struct Handle {
  std::shared_ptr<const engine::BellmanKey> key;
  std::string path;
};

engine::Backend BackendFromEnvironment() {
  const char* name = std::getenv("ZKFLEET_BACKEND");
  if (name == nullptr || *name == '\0') return engine::Backend::kAuto;
  try {
    return engine::ParseBackend(name);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("ZKFLEET_BACKEND: ") + e.what());
  }
}

std::shared_ptr<const engine::BellmanKey> LoadKey(const std::string& path) {
  return engine::BellmanKey::Load(path, engine::EngineOptions(BackendFromEnvironment()));
}

// supraseal-c2's SRS_cache: by path, at most four entries, most recently
// used first. A load happens under the lock, as there: two threads asking
// for one path load it once.
class KeyCache {
 public:
  std::shared_ptr<const engine::BellmanKey> Lookup(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == path) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().second;
      }
    }
    auto key = LoadKey(path);  // before eviction: a failed load evicts nothing
    if (entries_.size() > 3) entries_.pop_back();
    entries_.emplace_front(path, key);
    return key;
  }
  void Evict(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.remove_if([&](const auto& entry) { return entry.first == path; });
  }

 private:
  std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<const engine::BellmanKey>>> entries_;
};

// Never destroyed: parameters still cached at exit would otherwise be freed
// by a static destructor after the CUDA runtime has shut down.
KeyCache& Cache() {
  static KeyCache* cache = new KeyCache;
  return *cache;
}

int ErrnoOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kBadFormat:
    case ErrorCode::kMismatch:
    case ErrorCode::kUnsatisfied:
      return EINVAL;
    case ErrorCode::kNotFound: return ENOENT;
    case ErrorCode::kUnsupported: return ENOTSUP;
    case ErrorCode::kResourceExhausted: return ENOMEM;
    case ErrorCode::kDeviceError:
    case ErrorCode::kDeviceLost:
      return ENODEV;
    case ErrorCode::kIo:
    case ErrorCode::kNotLeader:
    case ErrorCode::kInternal:
      return EIO;
  }
  return EIO;
}

RustError Ok() { return RustError{0, nullptr}; }

RustError Failure(int code, const std::string& message) {
  // strdup may fail too: then the code alone reports the error.
  return RustError{code, strdup(("zkfleet supraseal-c2: " + message).c_str())};
}

// Runs `body`, turning every exception into a RustError.
template <class Body>
RustError Guard(const char* function, Body&& body) {
  try {
    body();
    return Ok();
  } catch (const Error& e) {
    return Failure(ErrnoOf(e.code()), std::string(function) + ": " + zkfleet::ErrorCodeName(e.code()) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Failure(ENOMEM, std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return Failure(EIO, std::string(function) + ": " + e.what());
  } catch (...) {
    return Failure(EIO, std::string(function) + ": unknown exception");
  }
}

const Handle& HandleOf(const SRS* srs) {
  if (srs == nullptr || srs->ptr == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "the SRS is null (create_SRS failed, or it was dropped)");
  }
  return *static_cast<const Handle*>(srs->ptr);
}

[[noreturn]] void BadAssignment(size_t circuit, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "circuit " + std::to_string(circuit) + ": " + what);
}

template <class T>
std::span<const T> Span(const T* data, size_t size, size_t circuit, const char* field) {
  if (size == 0) return {};
  if (data == nullptr) BadAssignment(circuit, std::string(field) + " is null with " + std::to_string(size) + " entries");
  return {data, size};
}

// A density bitmap of `bits` bits, copied (it is small: bits/64 words) with
// the bits past `bits` cleared, checked against the popcount the caller
// declares (supraseal-c2 sizes its MSMs by that count).
std::vector<uint64_t> Density(const uint64_t* words, size_t bits, size_t popcount, size_t circuit, const char* field) {
  const size_t n_words = bits / 64 + (bits % 64 != 0);
  std::span<const uint64_t> in = Span(words, n_words, circuit, field);
  std::vector<uint64_t> out(in.begin(), in.end());
  if (bits % 64 != 0) out.back() &= (uint64_t{1} << (bits % 64)) - 1;
  size_t count = 0;
  for (uint64_t w : out) count += static_cast<size_t>(__builtin_popcountll(w));
  if (count != popcount) {
    BadAssignment(circuit, std::string(field) + ": its popcount field says " + std::to_string(popcount) +
                               ", its " + std::to_string(bits) + " bits have " + std::to_string(count) + " set");
  }
  return out;
}

struct CircuitView {
  std::vector<uint64_t> a_aux, b_inp, b_aux;
  engine::AssignmentView view;
};

CircuitView ViewOf(const Assignment& p, size_t circuit, const engine::BellmanInfo& info) {
  // The sizes first, against the parameters: nothing of the caller's is read
  // past what they claim until the claims fit (supraseal-c2 asserts the same).
  if (p.inp_assignment_size != info.n_inputs || p.aux_assignment_size != info.n_aux || p.abc_size > info.domain_size) {
    BadAssignment(circuit, "inp_assignment_size " + std::to_string(p.inp_assignment_size) + ", aux_assignment_size " +
                               std::to_string(p.aux_assignment_size) + ", abc_size " + std::to_string(p.abc_size) +
                               " do not fit the parameters (inputs " + std::to_string(info.n_inputs) + ", aux " +
                               std::to_string(info.n_aux) + ", domain " + std::to_string(info.domain_size) + ")");
  }
  // supraseal-c2 asserts these (groth16_cuda.cu, the loop at the top of
  // generate_groth16_proofs_c); here they are errors.
  if (p.a_aux_bit_len != p.aux_assignment_size || p.b_aux_bit_len != p.aux_assignment_size) {
    BadAssignment(circuit, "a_aux_bit_len " + std::to_string(p.a_aux_bit_len) + " and b_aux_bit_len " +
                               std::to_string(p.b_aux_bit_len) + " must equal aux_assignment_size " +
                               std::to_string(p.aux_assignment_size));
  }
  if (p.b_inp_bit_len != p.inp_assignment_size) {
    BadAssignment(circuit, "b_inp_bit_len " + std::to_string(p.b_inp_bit_len) + " must equal inp_assignment_size " +
                               std::to_string(p.inp_assignment_size));
  }
  CircuitView out;
  out.a_aux = Density(p.a_aux_density, p.a_aux_bit_len, p.a_aux_popcount, circuit, "a_aux_density");
  out.b_inp = Density(p.b_inp_density, p.b_inp_bit_len, p.b_inp_popcount, circuit, "b_inp_density");
  out.b_aux = Density(p.b_aux_density, p.b_aux_bit_len, p.b_aux_popcount, circuit, "b_aux_density");
  // fr_t and FrMont are both four u64 limbs (static_assert above).
  auto scalars = [&](const fr_t* data, size_t size, const char* field) {
    std::span<const fr_t> s = Span(data, size, circuit, field);
    return std::span<const engine::FrMont>(reinterpret_cast<const engine::FrMont*>(s.data()), s.size());
  };
  engine::AssignmentView& v = out.view;
  v.a = scalars(p.a, p.abc_size, "a");
  v.b = scalars(p.b, p.abc_size, "b");
  v.c = scalars(p.c, p.abc_size, "c");
  v.input = scalars(p.inp_assignment_data, p.inp_assignment_size, "inp_assignment_data");
  v.aux = scalars(p.aux_assignment_data, p.aux_assignment_size, "aux_assignment_data");
  v.a_aux_density = out.a_aux;
  v.b_input_density = out.b_inp;
  v.b_aux_density = out.b_aux;
  return out;
}

// A Montgomery scalar from the caller as ProveOptions takes it: canonical,
// little-endian bytes.
std::array<uint8_t, 32> Canonical(const fr_t& mont, size_t circuit, const char* field) {
  const std::optional<std::array<uint8_t, 32>> canonical = engine::FrMontToCanonical(std::to_array(mont.limb));
  if (!canonical) {
    BadAssignment(circuit, std::string(field) + " is not a reduced Montgomery scalar (its limbs are >= r)");
  }
  return *canonical;
}

fp_t Mont(const engine::BigInt& canonical) {
  const engine::FqMont mont = engine::FqCanonicalToMont(canonical);
  fp_t out;
  std::memcpy(out.limb, mont.data(), sizeof(out.limb));
  return out;
}

affine_t G1(const engine::G1Point& p) {
  if (p.infinity) return affine_t{};  // sppark: the point at infinity is all zero
  return {Mont(p.x), Mont(p.y)};
}

affine_fp2_t G2(const engine::G2Point& p) {
  if (p.infinity) return affine_fp2_t{};
  return {{Mont(p.x0), Mont(p.x1)}, {Mont(p.y0), Mont(p.y1)}};
}

}  // namespace

// ---- The entry points ----

// groth16_srs.cuh: create_SRS(SRS& ret, const char* srs_path, bool cache).
ZKFLEET_SUPRASEAL_EXPORT RustError create_SRS(SRS* ret, const char* srs_path, bool cache) {
  return Guard("create_SRS", [&] {
    if (ret == nullptr) throw Error(ErrorCode::kInvalidArgument, "ret is null");
    if (srs_path == nullptr) throw Error(ErrorCode::kInvalidArgument, "srs_path is null");
    auto handle = std::make_unique<Handle>();
    handle->path = srs_path;
    handle->key = cache ? Cache().Lookup(handle->path) : LoadKey(handle->path);
    // As supraseal-c2's assignment: whatever ret held is overwritten, not
    // released (Rust passes SRS::default(), a null pointer).
    ret->ptr = handle.release();
  });
}

// groth16_srs.cuh: evict_SRS(const SRS& ref).
ZKFLEET_SUPRASEAL_EXPORT void evict_SRS(const SRS* ref) {
  if (ref == nullptr || ref->ptr == nullptr) return;
  try {
    Cache().Evict(static_cast<const Handle*>(ref->ptr)->path);
  } catch (...) {  // std::mutex::lock can throw; nothing to report through a void function
  }
}

// groth16_srs.cuh: drop_SRS(SRS& ref), declared `by_ref: &SRS` in lib.rs,
// which nulls ptr itself afterwards; so ptr is left as it is here.
ZKFLEET_SUPRASEAL_EXPORT void drop_SRS(const SRS* ref) {
  if (ref == nullptr) return;
  delete static_cast<const Handle*>(ref->ptr);
}

// groth16_srs.cuh: SRS::by_value clone_SRS(const SRS& rhs). Out of memory
// gives a null SRS, which generate_groth16_proofs_c refuses with an error.
ZKFLEET_SUPRASEAL_EXPORT SRS clone_SRS(const SRS* rhs) {
  if (rhs == nullptr || rhs->ptr == nullptr) return SRS{nullptr};
  try {
    return SRS{new Handle(*static_cast<const Handle*>(rhs->ptr))};
  } catch (...) {
    return SRS{nullptr};
  }
}

// groth16_cuda.cu: generate_groth16_proofs_c(const Assignment<fr_t> provers[],
// size_t num_circuits, const fr_t r_s[], const fr_t s_s[],
// groth16_proof proofs[], SRS& srs).
ZKFLEET_SUPRASEAL_EXPORT RustError generate_groth16_proofs_c(const Assignment provers[], size_t num_circuits,
                                                             const fr_t r_s[], const fr_t s_s[],
                                                             groth16_proof proofs[], const SRS* srs) {
  return Guard("generate_groth16_proofs_c", [&] {
    const Handle& handle = HandleOf(srs);
    if (num_circuits == 0) return;
    if (provers == nullptr || r_s == nullptr || s_s == nullptr || proofs == nullptr) {
      throw Error(ErrorCode::kInvalidArgument, "provers, r_s, s_s and proofs must not be null");
    }
    std::vector<groth16_proof> out(num_circuits);
    for (size_t c = 0; c < num_circuits; ++c) {
      const CircuitView circuit = ViewOf(provers[c], c, handle.key->info());
      engine::ProveOptions options;
      options.r = Canonical(r_s[c], c, "r_s");
      options.s = Canonical(s_s[c], c, "s_s");
      options.verify = true;  // BellmanKey::Prove returns only a proof that verified
      engine::BellmanProof proof;
      try {
        proof = handle.key->Prove(circuit.view, options);
      } catch (const Error& e) {
        throw Error(e.code(), "circuit " + std::to_string(c) + " of " + std::to_string(num_circuits) + " (" +
                                  handle.path + "): " + e.what());
      }
      if (!proof.check.verified) {
        throw Error(ErrorCode::kInternal, "circuit " + std::to_string(c) + ": the proof came back unverified");
      }
      out[c] = {G1(proof.points.a), G2(proof.points.b), G1(proof.points.c)};
    }
    std::memcpy(proofs, out.data(), num_circuits * sizeof(groth16_proof));
  });
}
