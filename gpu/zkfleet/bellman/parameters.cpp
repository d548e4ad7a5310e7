#include "zkfleet/bellman/parameters.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>

#include "zkfleet/bellman/file_pages.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/io/mapped_file.hpp"

namespace zkfleet::bellman {

namespace {

using Fq = ff::Bls12_381Fq;

[[noreturn]] void Fail(const std::string& origin, const std::string& what) {
  throw Error(ErrorCode::kBadFormat, origin + ": " + what);
}

// Reads the file front to back with bounds checks; errors name the origin,
// the field and the offset.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}

  const uint8_t* Take(uint64_t n, const std::string& what) {
    if (n > remaining()) {
      Fail(origin_, "truncated in " + what + ": needs " + std::to_string(n) + " bytes at offset " +
                        std::to_string(pos_) + ", " + std::to_string(remaining()) + " left");
    }
    const uint8_t* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint32_t U32BE(const std::string& what) {
    const uint8_t* p = Take(4, what);
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  uint64_t position() const { return pos_; }
  const std::string& origin() const { return origin_; }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  const std::string& origin_;
};

DecodeChecks ChecksOf(const ReadOptions& options) {
  return DecodeChecks{.curve_and_subgroup = options.check_points, .zero_is_infinity = options.zero_is_infinity};
}

// One uncompressed point of either group.
PointError Decode(const uint8_t* in, G1Affine* out, const DecodeChecks& checks) {
  return DecodeG1Uncompressed(in, out, checks);
}
PointError Decode(const uint8_t* in, G2Affine* out, const DecodeChecks& checks) {
  return DecodeG2Uncompressed(in, out, checks);
}
void Encode(const G1Affine& p, uint8_t* out) { EncodeG1Uncompressed(p, out); }
void Encode(const G2Affine& p, uint8_t* out) { EncodeG2Uncompressed(p, out); }
template <class Affine>
constexpr size_t UncompressedBytes() {
  return std::is_same_v<Affine, G1Affine> ? kG1UncompressedBytes : kG2UncompressedBytes;
}

template <class Affine>
Affine ReadPoint(Cursor& cursor, const std::string& what, const DecodeChecks& checks) {
  Affine p;
  const PointError error = Decode(cursor.Take(UncompressedBytes<Affine>(), what), &p, checks);
  if (error != PointError::kOk) Fail(cursor.origin(), what + ": " + PointErrorText(error));
  return p;
}

// A point array located (count checked against the bytes left), decoded later.
struct Span {
  const uint8_t* data = nullptr;
  uint32_t count = 0;
};

template <class Affine>
Span LocateArray(Cursor& cursor, const std::string& what) {
  const uint32_t count = cursor.U32BE(what + " count");
  const uint64_t need = uint64_t{count} * UncompressedBytes<Affine>();
  if (need > cursor.remaining()) {
    Fail(cursor.origin(), what + ": count " + std::to_string(count) + " needs " + std::to_string(need) +
                              " bytes, " + std::to_string(cursor.remaining()) + " left");
  }
  return Span{cursor.Take(need, what), count};
}

// One point array of the file, located, and where its points go.
struct ArrayJob {
  const char* name;
  Span span;
  bool g2;
  void* out;  // G1Affine* or G2Affine*, span.count points
  DecodeChecks checks;
  size_t PointBytes() const { return g2 ? kG2UncompressedBytes : kG1UncompressedBytes; }
};

// Maps the pages of [data, data + bytes) of a file mapping in one call
// (ParametersFile::Open says why). Advice only: on failure (a buffer that is
// not a mapping, an old kernel) the pages fault as they are read.
void PrefaultForRead(const uint8_t* data, uint64_t bytes) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(kPage - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
}

// The bytes of the file decoded per task: large enough that a task's
// overhead vanishes next to its points (~22k G1 points), small enough for
// the threads to share the end of the file evenly and for progress reports.
constexpr uint64_t kChunkBytes = 2ull << 20;

// Decodes every array straight into its output, in parallel, in chunks of
// kChunkBytes across all arrays; the error names the first bad point in
// file order (the one a sequential read would report). Progress as
// ReadOptions::progress says.
void DecodeArrays(std::span<const ArrayJob> jobs, const std::string& origin, uint64_t total_bytes, ThreadPool& pool,
                  const ReadOptions& options) {
  struct Chunk {
    uint32_t job;
    uint32_t first, count;
  };
  std::vector<Chunk> chunks;
  uint64_t array_bytes = 0;
  for (uint32_t j = 0; j < jobs.size(); ++j) {
    const ArrayJob& job = jobs[j];
    const uint32_t per_chunk = static_cast<uint32_t>(std::max<uint64_t>(1, kChunkBytes / job.PointBytes()));
    for (uint32_t first = 0; first < job.span.count; first += std::min(per_chunk, job.span.count - first)) {
      chunks.push_back({j, first, std::min(per_chunk, job.span.count - first)});
    }
    array_bytes += uint64_t{job.span.count} * job.PointBytes();
  }
  // The first failure in file order: (array << 32) | index.
  constexpr uint64_t kNone = ~uint64_t{0};
  std::atomic<uint64_t> first_bad{kNone};
  std::atomic<uint64_t> done{total_bytes - array_bytes};
  using Clock = std::chrono::steady_clock;
  std::mutex progress_mutex;
  Clock::time_point next_report = Clock::now() + options.progress_interval;  // guarded by progress_mutex
  if (options.progress) options.progress(done.load(), total_bytes);
  pool.RunTasks(chunks.size(), [&](size_t c) {
    const Chunk& chunk = chunks[c];
    const ArrayJob& job = jobs[chunk.job];
    const uint64_t key0 = (uint64_t{chunk.job} << 32) | chunk.first;
    if (key0 > first_bad.load(std::memory_order_relaxed)) return;  // past a failure already found
    const uint8_t* in = job.span.data + uint64_t{chunk.first} * job.PointBytes();
    PrefaultForRead(in, uint64_t{chunk.count} * job.PointBytes());
    uint32_t bad = chunk.count;
    if (job.g2) {
      G2Affine* out = static_cast<G2Affine*>(job.out) + chunk.first;
      for (uint32_t i = 0; i < chunk.count; ++i, in += kG2UncompressedBytes) {
        if (Decode(in, out + i, job.checks) != PointError::kOk) {
          bad = i;
          break;
        }
      }
    } else {
      G1Affine* out = static_cast<G1Affine*>(job.out) + chunk.first;
      for (uint32_t i = 0; i < chunk.count; ++i, in += kG1UncompressedBytes) {
        if (Decode(in, out + i, job.checks) != PointError::kOk) {
          bad = i;
          break;
        }
      }
    }
    if (bad < chunk.count) {
      const uint64_t key = key0 + bad;
      uint64_t seen = first_bad.load();
      while (key < seen && !first_bad.compare_exchange_weak(seen, key)) {
      }
      return;
    }
    const uint64_t now_done = done.fetch_add(uint64_t{chunk.count} * job.PointBytes()) +
                              uint64_t{chunk.count} * job.PointBytes();
    if (options.progress && now_done < total_bytes) {
      std::unique_lock lock(progress_mutex, std::try_to_lock);
      if (lock.owns_lock() && Clock::now() >= next_report) {
        options.progress(now_done, total_bytes);
        next_report = Clock::now() + options.progress_interval;
      }
    }
  });
  const uint64_t bad = first_bad.load();
  if (bad != kNone) {
    const ArrayJob& job = jobs[bad >> 32];
    const uint32_t index = static_cast<uint32_t>(bad);
    const uint8_t* in = job.span.data + uint64_t{index} * job.PointBytes();
    PointError error;
    if (job.g2) {
      G2Affine p;
      error = Decode(in, &p, job.checks);
    } else {
      G1Affine p;
      error = Decode(in, &p, job.checks);
    }
    Fail(origin, std::string(job.name) + "[" + std::to_string(index) + "]: " + PointErrorText(error));
  }
  if (options.progress) options.progress(total_bytes, total_bytes);
}

// The output vectors' memory. A fresh process's first touch of each 4 KiB
// page is a page fault on the thread that touches it, and on the 2-core VM
// (shadow-paged) every TLB miss over 4 KiB pages is slow too: value-
// initialising 95 MB of 4 KiB pages took 0.3-0.4 s there, four times the
// decode. So the vectors are reserved first, advised to use transparent huge
// pages (MADV_HUGEPAGE: the proofs' MSMs gain from them as well) and their
// pages populated by the kernel in parallel slices (MADV_POPULATE_WRITE,
// Linux 5.14+), and only then resized and decoded into (a PointVector's
// resize writes nothing: at 2^27 a zeroing resize was 45 GB of memset on
// one thread). Advice that fails is harmless: the pages then fault as before.
template <class Vector>
PageBlock Reserve(Vector& out, uint32_t count) {
  out.reserve(count);
  return {reinterpret_cast<uint8_t*>(out.data()), size_t{count} * sizeof(typename Vector::value_type)};
}

// Sized, then decoded into. A PointVector's resize leaves the points
// uninitialised; the .vk's std::vector writes zeros first (a few points).
template <class Vector>
ArrayJob JobOf(const char* name, const Span& span, Vector& out, const DecodeChecks& checks) {
  out.resize(span.count);
  return ArrayJob{name, span, std::is_same_v<typename Vector::value_type, G2Affine>, out.data(), checks};
}

// Decodes one located array (the .vk's IC) into `out`.
template <class Vector>
void DecodeArray(const Span& span, Vector& out, const char* what, const std::string& origin,
                 ThreadPool& pool, const ReadOptions& options) {
  const ArrayJob job = JobOf(what, span, out, ChecksOf(options));
  ReadOptions quiet = options;
  quiet.progress = nullptr;
  DecodeArrays({&job, 1}, origin, uint64_t{span.count} * job.PointBytes(), pool, quiet);
}

// The .vk fields; the IC array is only located.
struct VkLayout {
  VerifyingKey vk;
  Span ic;
};

VkLayout ReadVkFixed(Cursor& cursor, const DecodeChecks& checks) {
  VkLayout out;
  out.vk.alpha_g1 = ReadPoint<G1Affine>(cursor, "alpha_g1", checks);
  out.vk.beta_g1 = ReadPoint<G1Affine>(cursor, "beta_g1", checks);
  out.vk.beta_g2 = ReadPoint<G2Affine>(cursor, "beta_g2", checks);
  out.vk.gamma_g2 = ReadPoint<G2Affine>(cursor, "gamma_g2", checks);
  out.vk.delta_g1 = ReadPoint<G1Affine>(cursor, "delta_g1", checks);
  out.vk.delta_g2 = ReadPoint<G2Affine>(cursor, "delta_g2", checks);
  out.ic = LocateArray<G1Affine>(cursor, "ic");
  if (out.ic.count == 0) Fail(cursor.origin(), "ic: empty (it holds at least the constant one's point)");
  return out;
}

void ExpectEnd(const Cursor& cursor, const std::string& after) {
  if (cursor.remaining() != 0) {
    Fail(cursor.origin(), std::to_string(cursor.remaining()) + " trailing bytes after " + after + " (offset " +
                              std::to_string(cursor.position()) + ")");
  }
}

// The .params body after the vk: structure first (every count against the
// bytes left, the relations between counts), then the points.
Parameters ReadParamsBody(Cursor& cursor, uint64_t total_bytes, ThreadPool& pool, const ReadOptions& options,
                          bool expect_end) {
  const DecodeChecks checks = ChecksOf(options);
  VkLayout vk = ReadVkFixed(cursor, checks);
  const Span h = LocateArray<G1Affine>(cursor, "h");
  const Span l = LocateArray<G1Affine>(cursor, "l");
  const Span a = LocateArray<G1Affine>(cursor, "a");
  const Span b_g1 = LocateArray<G1Affine>(cursor, "b_g1");
  const Span b_g2 = LocateArray<G2Affine>(cursor, "b_g2");
  if (expect_end) ExpectEnd(cursor, "b_g2");
  const std::string& origin = cursor.origin();
  if (b_g1.count != b_g2.count) {
    Fail(origin, "b_g1 has " + std::to_string(b_g1.count) + " points but b_g2 has " + std::to_string(b_g2.count));
  }
  const uint64_t n = uint64_t{h.count} + 1;
  if ((n & (n - 1)) != 0) Fail(origin, "h: " + std::to_string(h.count) + " points, not a power of two minus one");

  Parameters params;
  params.vk = std::move(vk.vk);
  const PageBlock blocks[] = {Reserve(params.vk.ic, vk.ic.count), Reserve(params.h, h.count),
                              Reserve(params.l, l.count),         Reserve(params.a, a.count),
                              Reserve(params.b_g1, b_g1.count),   Reserve(params.b_g2, b_g2.count)};
  PopulatePages(blocks, PageUse::kWrite, pool);
  // The proving arrays' curve and subgroup tests may be left to the device
  // (ReadOptions::arrays_checked_on_device); the encoding checks stay.
  DecodeChecks array_checks = checks;
  if (options.arrays_checked_on_device) array_checks.curve_and_subgroup = false;
  const ArrayJob jobs[] = {JobOf("ic", vk.ic, params.vk.ic, checks),          JobOf("h", h, params.h, array_checks),
                           JobOf("l", l, params.l, array_checks),             JobOf("a", a, params.a, array_checks),
                           JobOf("b_g1", b_g1, params.b_g1, array_checks), JobOf("b_g2", b_g2, params.b_g2, array_checks)};
  DecodeArrays(jobs, origin, total_bytes, pool, options);
  return params;
}

// ---- writing ---------------------------------------------------------------

void AppendU32BE(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}
template <class Affine>
void AppendPoint(std::vector<uint8_t>& out, const Affine& p) {
  const size_t at = out.size();
  out.resize(at + UncompressedBytes<Affine>());
  Encode(p, out.data() + at);
}

uint32_t CountOf(size_t n, const std::string& path, const char* what) {
  if (n > UINT32_MAX) {
    throw Error(ErrorCode::kInvalidArgument, "cannot write " + path + ": " + what + " has " + std::to_string(n) +
                                                 " points, more than a u32 count holds");
  }
  return static_cast<uint32_t>(n);
}

// Count, then the points, encoded in parallel a block at a time so that the
// buffer stays small next to a multi-gigabyte file.
template <class Vector>
void WriteArray(AtomicFile& file, const Vector& points, ThreadPool& pool, const std::string& path, const char* what) {
  constexpr size_t kBytes = UncompressedBytes<typename Vector::value_type>();
  constexpr size_t kBlock = (size_t{32} << 20) / kBytes;
  file.WriteU32BE(CountOf(points.size(), path, what));
  std::vector<uint8_t> buffer(std::min(points.size(), kBlock) * kBytes);
  for (size_t begin = 0; begin < points.size(); begin += kBlock) {
    const size_t n = std::min(kBlock, points.size() - begin);
    pool.ParallelFor(n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) Encode(points[begin + i], buffer.data() + i * kBytes);
    });
    file.Write(buffer.data(), n * kBytes);
  }
}

// ---- proofs ----------------------------------------------------------------

engine::BigInt ToBigInt(const Fq& a) {
  engine::BigInt out{};
  a.to_canonical(out.data());
  return out;
}
engine::G1Point ToEngine(const G1Affine& p) {
  if (p.is_infinity()) return engine::G1Point{.infinity = true};
  return engine::G1Point{ToBigInt(p.x), ToBigInt(p.y), false};
}
engine::G2Point ToEngine(const G2Affine& p) {
  if (p.is_infinity()) return engine::G2Point{.infinity = true};
  return engine::G2Point{ToBigInt(p.x.c0), ToBigInt(p.x.c1), ToBigInt(p.y.c0), ToBigInt(p.y.c1), false};
}
// Canonical integers are taken as they are (reduced mod q if they are not
// below it: EncodeProof's input comes from the provers, never from a file).
Fq FromBigInt(const engine::BigInt& v) { return Fq::from_canonical(v.data()); }
G1Affine FromEngine(const engine::G1Point& p) {
  if (p.infinity) return G1Affine::infinity();
  return G1Affine{FromBigInt(p.x), FromBigInt(p.y)};
}
G2Affine FromEngine(const engine::G2Point& p) {
  if (p.infinity) return G2Affine::infinity();
  return G2Affine{{FromBigInt(p.x0), FromBigInt(p.x1)}, {FromBigInt(p.y0), FromBigInt(p.y1)}};
}

engine::ProofPoints DecodeOneProof(const uint8_t* in, const std::string& origin, const std::string& name) {
  G1Affine a, c;
  G2Affine b;
  // bellperson's Proof::read_many refuses the identity too.
  auto check = [&](PointError error, bool infinity, const char* part) {
    if (error != PointError::kOk) Fail(origin, name + "." + part + ": " + PointErrorText(error));
    if (infinity) Fail(origin, name + "." + part + ": point at infinity");
  };
  const PointError a_error = DecodeG1Compressed(in, &a);
  check(a_error, a_error == PointError::kOk && a.is_infinity(), "a");
  const PointError b_error = DecodeG2Compressed(in + kG1CompressedBytes, &b);
  check(b_error, b_error == PointError::kOk && b.is_infinity(), "b");
  const PointError c_error = DecodeG1Compressed(in + kG1CompressedBytes + kG2CompressedBytes, &c);
  check(c_error, c_error == PointError::kOk && c.is_infinity(), "c");
  engine::ProofPoints out;
  out.a = ToEngine(a);
  out.b = ToEngine(b);
  out.c = ToEngine(c);
  out.curve = engine::Curve::kBls12_381;
  return out;
}

}  // namespace

// ---- reading ---------------------------------------------------------------

VerifyingKey ParseVerifyingKey(std::span<const uint8_t> bytes, const std::string& origin, ThreadPool& pool,
                               const ReadOptions& options) {
  Cursor cursor(bytes, origin);
  VkLayout layout = ReadVkFixed(cursor, ChecksOf(options));
  ExpectEnd(cursor, "ic");
  DecodeArray(layout.ic, layout.vk.ic, "ic", origin, pool, options);
  return std::move(layout.vk);
}

VerifyingKey ReadVerifyingKey(const std::string& path, ThreadPool& pool, const ReadOptions& options) {
  const io::MappedFile file = io::MappedFile::Open(path);
  return ParseVerifyingKey(file.bytes(), path, pool, options);
}

Parameters ParseParameters(std::span<const uint8_t> bytes, const std::string& origin, ThreadPool& pool,
                           const ReadOptions& options) {
  Cursor cursor(bytes, origin);
  return ReadParamsBody(cursor, bytes.size(), pool, options, /*expect_end=*/true);
}

Parameters ReadParameters(const std::string& path, ThreadPool& pool, const ReadOptions& options) {
  return ReadParameters(ParametersFile::Open(path), pool, options);
}

Parameters ReadParameters(const ParametersFile& file, ThreadPool& pool, const ReadOptions& options) {
  return ParseParameters(file.bytes(), file.path(), pool, options);
}

// ---- ParametersFile ----------------------------------------------------------

ParametersFile ParametersFile::Open(const std::string& path) {
  ParametersFile file;
  file.path_ = path;
  file.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd_ < 0) {
    const int err = errno;
    throw Error((err == ENOENT || err == ENOTDIR) ? ErrorCode::kNotFound : ErrorCode::kIo,
                path + ": cannot open: " + std::strerror(err));
  }
  // Before any byte is read: what a check cache compares.
  file.identity_ = engine::FileIdentity::OfDescriptor(file.fd_, path);
  struct stat st {};
  if (::fstat(file.fd_, &st) != 0) throw Error(ErrorCode::kIo, path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::kIo, path + ": not a regular file");
  file.size_ = static_cast<size_t>(file.identity_.size);
  if (file.size_ == 0) return file;
  // Every read here reads the whole file: the kernel's read-ahead of all of
  // it starts now (MADV_WILLNEED), and each decoding thread maps the pages of
  // its chunk in one call before decoding it (MADV_POPULATE_READ,
  // DecodeArrays), so a cold file streams in while the first chunks are
  // decoded and a cached one costs no page fault per few pages. Not
  // MAP_POPULATE: it would read a whole cold file before the first point is
  // decoded, and a file larger than the page cache twice. Not
  // MADV_SEQUENTIAL: the pages would be the first reclaimed, and a restart
  // finds them cached.
  void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, file.fd_, 0);
  if (addr == MAP_FAILED) throw Error(ErrorCode::kIo, path + ": cannot mmap: " + std::strerror(errno));
  file.data_ = static_cast<const uint8_t*>(addr);
  ::madvise(addr, file.size_, MADV_WILLNEED);  // advice only: failure is harmless
  return file;
}

ParametersFile::~ParametersFile() { Reset(); }

ParametersFile::ParametersFile(ParametersFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)),
      identity_(other.identity_) {}

ParametersFile& ParametersFile::operator=(ParametersFile&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
    identity_ = other.identity_;
  }
  return *this;
}

void ParametersFile::Reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

MpcParameters ParseMpcParameters(std::span<const uint8_t> bytes, const std::string& origin, ThreadPool& pool,
                                 const ReadOptions& options) {
  Cursor cursor(bytes, origin);
  MpcParameters out;
  out.params = ReadParamsBody(cursor, bytes.size(), pool, options, /*expect_end=*/false);
  std::memcpy(out.cs_hash.data(), cursor.Take(out.cs_hash.size(), "cs_hash"), out.cs_hash.size());
  const uint32_t count = cursor.U32BE("contributions count");
  constexpr uint64_t kContributionBytes = 3 * kG1UncompressedBytes + kG2UncompressedBytes + 64;
  if (uint64_t{count} * kContributionBytes > cursor.remaining()) {
    Fail(origin, "contributions: count " + std::to_string(count) + " needs " +
                     std::to_string(count * kContributionBytes) + " bytes, " + std::to_string(cursor.remaining()) +
                     " left");
  }
  const DecodeChecks checks = ChecksOf(options);
  out.contributions.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string name = "contributions[" + std::to_string(i) + "].";
    MpcContribution& c = out.contributions[i];
    c.delta_after = ReadPoint<G1Affine>(cursor, name + "delta_after", checks);
    c.s = ReadPoint<G1Affine>(cursor, name + "s", checks);
    c.s_delta = ReadPoint<G1Affine>(cursor, name + "s_delta", checks);
    c.r_delta = ReadPoint<G2Affine>(cursor, name + "r_delta", checks);
    std::memcpy(c.transcript.data(), cursor.Take(c.transcript.size(), name + "transcript"), c.transcript.size());
  }
  ExpectEnd(cursor, "the contributions");
  return out;
}

MpcParameters ReadMpcParameters(const std::string& path, ThreadPool& pool, const ReadOptions& options) {
  const io::MappedFile file = io::MappedFile::Open(path);
  return ParseMpcParameters(file.bytes(), path, pool, options);
}

// ---- writing ---------------------------------------------------------------

std::vector<uint8_t> SerializeVerifyingKey(const VerifyingKey& vk) {
  std::vector<uint8_t> out;
  out.reserve(3 * kG1UncompressedBytes + 3 * kG2UncompressedBytes + 4 + vk.ic.size() * kG1UncompressedBytes);
  AppendPoint(out, vk.alpha_g1);
  AppendPoint(out, vk.beta_g1);
  AppendPoint(out, vk.beta_g2);
  AppendPoint(out, vk.gamma_g2);
  AppendPoint(out, vk.delta_g1);
  AppendPoint(out, vk.delta_g2);
  AppendU32BE(out, CountOf(vk.ic.size(), "a verifying key", "ic"));
  for (const G1Affine& p : vk.ic) AppendPoint(out, p);
  return out;
}

void WriteVerifyingKey(const std::string& path, const VerifyingKey& vk) {
  const std::vector<uint8_t> bytes = SerializeVerifyingKey(vk);
  AtomicFile file(path, "verifying key", 0644);  // keys are public data
  file.Write(bytes.data(), bytes.size());
  file.Commit();
}

void WriteParameters(const std::string& path, const Parameters& params, ThreadPool& pool) {
  // The vk's fixed part, then every array the same way.
  std::vector<uint8_t> fixed;
  AppendPoint(fixed, params.vk.alpha_g1);
  AppendPoint(fixed, params.vk.beta_g1);
  AppendPoint(fixed, params.vk.beta_g2);
  AppendPoint(fixed, params.vk.gamma_g2);
  AppendPoint(fixed, params.vk.delta_g1);
  AppendPoint(fixed, params.vk.delta_g2);
  AtomicFile file(path, "parameters", 0644);  // keys are public data
  file.Write(fixed.data(), fixed.size());
  WriteArray(file, params.vk.ic, pool, path, "ic");
  WriteArray(file, params.h, pool, path, "h");
  WriteArray(file, params.l, pool, path, "l");
  WriteArray(file, params.a, pool, path, "a");
  WriteArray(file, params.b_g1, pool, path, "b_g1");
  WriteArray(file, params.b_g2, pool, path, "b_g2");
  file.Commit();
}

engine::VerificationKey ToEngineKey(const VerifyingKey& vk) {
  engine::VerificationKey out;
  out.curve = engine::Curve::kBls12_381;
  out.n_public = vk.ic.empty() ? 0 : static_cast<uint32_t>(vk.ic.size() - 1);
  out.alpha1 = ToEngine(vk.alpha_g1);
  out.beta2 = ToEngine(vk.beta_g2);
  out.gamma2 = ToEngine(vk.gamma_g2);
  out.delta2 = ToEngine(vk.delta_g2);
  out.ic.reserve(vk.ic.size());
  for (const G1Affine& p : vk.ic) out.ic.push_back(ToEngine(p));
  return out;
}

// ---- proofs ----------------------------------------------------------------

std::array<uint8_t, kProofBytes> EncodeProof(const engine::ProofPoints& proof) {
  std::array<uint8_t, kProofBytes> out{};
  EncodeG1Compressed(FromEngine(proof.a), out.data());
  EncodeG2Compressed(FromEngine(proof.b), out.data() + kG1CompressedBytes);
  EncodeG1Compressed(FromEngine(proof.c), out.data() + kG1CompressedBytes + kG2CompressedBytes);
  return out;
}

engine::ProofPoints DecodeProof(std::span<const uint8_t> bytes, const std::string& origin) {
  if (bytes.size() != kProofBytes) {
    Fail(origin, "a proof is " + std::to_string(kProofBytes) + " bytes, not " + std::to_string(bytes.size()));
  }
  return DecodeOneProof(bytes.data(), origin, "proof");
}

std::vector<engine::ProofPoints> DecodeProofs(std::span<const uint8_t> bytes, const std::string& origin) {
  if (bytes.empty() || bytes.size() % kProofBytes != 0) {
    Fail(origin, std::to_string(bytes.size()) + " bytes is not a non-empty multiple of " +
                     std::to_string(kProofBytes) + " (one proof per partition)");
  }
  std::vector<engine::ProofPoints> out;
  out.reserve(bytes.size() / kProofBytes);
  for (size_t i = 0; i < bytes.size() / kProofBytes; ++i) {
    out.push_back(DecodeOneProof(bytes.data() + i * kProofBytes, origin, "proof[" + std::to_string(i) + "]"));
  }
  return out;
}

}  // namespace zkfleet::bellman
