#include "zkfleet/bellman/decoded_image.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <utility>

#include "zkfleet/bellman/file_pages.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::bellman {
namespace {

constexpr char kMagic[8] = {'Z', 'K', 'F', 'P', 'T', 'S', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint64_t kPage = 4096;
constexpr size_t kMaxSourcePath = 2048;

// The arrays in file order: ic, h, l, a, b_g1, b_g2.
constexpr int kArrays = 6;

struct VkPoints {
  G1Affine alpha_g1, beta_g1;
  G2Affine beta_g2, gamma_g2;
  G1Affine delta_g1;
  G2Affine delta_g2;
};

// Everything a reader compares before it trusts a byte after the header.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t g1_bytes, g2_bytes;  // sizeof the in-memory points
  uint32_t source_path_bytes;
  G1Affine g1_generator;  // as this build holds it
  G2Affine g2_generator;
  uint64_t source_device, source_inode, source_size;
  int64_t source_mtime_ns, source_ctime_ns;
  uint64_t counts[kArrays];
  uint64_t offsets[kArrays];
  uint64_t vk_offset;
  uint64_t total_bytes;
  char source_path[kMaxSourcePath];
  uint64_t checksum;  // FNV-1a of the bytes before it: a torn or damaged header, not an adversary
};
static_assert(sizeof(Header) <= kHeaderBytes);
static_assert(std::is_trivially_copyable_v<G1Affine> && std::is_trivially_copyable_v<G2Affine>);

uint64_t Checksum(const Header& h) {
  const auto* p = reinterpret_cast<const uint8_t*>(&h);
  uint64_t x = 14695981039346656037ull;
  for (size_t i = 0; i < offsetof(Header, checksum); ++i) x = (x ^ p[i]) * 1099511628211ull;
  return x;
}

uint64_t RoundUp(uint64_t n) { return (n + kPage - 1) & ~(kPage - 1); }

uint64_t ElementBytes(int array) { return array == 5 ? sizeof(G2Affine) : sizeof(G1Affine); }

// The layout of an image of these counts: offsets and total size.
void Lay(Header& h) {
  uint64_t at = kHeaderBytes;
  h.vk_offset = at;
  at = RoundUp(at + sizeof(VkPoints));
  for (int i = 0; i < kArrays; ++i) {
    h.offsets[i] = at;
    at = RoundUp(at + h.counts[i] * ElementBytes(i));
  }
  h.total_bytes = at;
}

void SetSource(Header& h, const engine::FileIdentity& source) {
  h.source_device = source.device;
  h.source_inode = source.inode;
  h.source_size = source.size;
  h.source_mtime_ns = source.mtime_ns;
  h.source_ctime_ns = source.ctime_ns;
}

bool SameSource(const Header& h, const engine::FileIdentity& source) {
  return h.source_device == source.device && h.source_inode == source.inode && h.source_size == source.size &&
         h.source_mtime_ns == source.mtime_ns && h.source_ctime_ns == source.ctime_ns;
}

// The header as this build writes it, before the source and counts.
Header BlankHeader() {
  Header h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.g1_bytes = sizeof(G1Affine);
  h.g2_bytes = sizeof(G2Affine);
  h.g1_generator = curve::Bls12_381G1::generator();
  h.g2_generator = curve::Bls12_381G2::generator();
  return h;
}

// Why `h` is not an image this build can use for `source` ("" when it is).
std::string Mismatch(const Header& h, const engine::FileIdentity& source, uint64_t file_bytes) {
  const Header mine = BlankHeader();
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "not a decoded image";
  if (h.checksum != Checksum(h)) return "its header is damaged";
  if (h.version != kVersion || h.g1_bytes != mine.g1_bytes || h.g2_bytes != mine.g2_bytes ||
      std::memcmp(&h.g1_generator, &mine.g1_generator, sizeof(G1Affine)) != 0 ||
      std::memcmp(&h.g2_generator, &mine.g2_generator, sizeof(G2Affine)) != 0) {
    return "written by a build that holds points differently";
  }
  if (!SameSource(h, source)) return "written for another version of the file";
  Header laid = h;
  Lay(laid);
  if (laid.total_bytes != h.total_bytes || std::memcmp(laid.offsets, h.offsets, sizeof h.offsets) != 0 ||
      laid.vk_offset != h.vk_offset) {
    return "its layout does not add up";
  }
  if (file_bytes != h.total_bytes) {
    return "its size is " + std::to_string(file_bytes) + " bytes, its header says " + std::to_string(h.total_bytes);
  }
  if (h.counts[1] + 1 == 0 || ((h.counts[1] + 1) & h.counts[1]) != 0) return "h's count is not a power of two minus one";
  if (h.counts[4] != h.counts[5]) return "b_g1 and b_g2 differ in count";
  if (h.counts[0] == 0) return "ic is empty";
  for (uint64_t count : h.counts) {
    if (count > UINT32_MAX) return "a count exceeds a u32";
  }
  return "";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool ReadAt(int fd, void* out, uint64_t bytes, uint64_t offset) {
  auto* p = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    const ssize_t r = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    bytes -= static_cast<uint64_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

std::optional<Header> ReadHeader(int fd) {
  Header h;
  if (!ReadAt(fd, &h, sizeof h, 0)) return std::nullopt;
  return h;
}

// Each array's points: mapped from the image where the vector's block is a
// large mapping of its own, else copied. Pages are read in in parallel
// slices; an array whose mapping fails leaves the whole image unused.
template <class Vector>
bool Fill(Vector& out, uint64_t count, int fd, uint64_t offset, std::vector<PageBlock>& mapped) {
  out.resize(count);
  const size_t bytes = count * sizeof(typename Vector::value_type);
  if (bytes == 0) return true;
  if (out.capacity() == count && runtime::MapFileIntoLargeArray(out.data(), bytes, fd, offset)) {
    mapped.push_back({reinterpret_cast<uint8_t*>(out.data()), static_cast<size_t>(bytes)});
    return true;
  }
  if (bytes >= runtime::kLargeArrayAlignment && out.capacity() == count) return false;  // the block may be gone
  return ReadAt(fd, out.data(), bytes, offset);
}

// A few points of each array on their curves: a zeroed or shifted page
// would show here.
template <class Vector>
bool SampleOnCurve(const Vector& points) {
  const size_t n = points.size();
  if (n == 0) return true;
  for (size_t k = 0; k < 16; ++k) {
    const auto& p = points[k * (n - 1) / 15];
    if (!p.is_infinity() && !curve::is_on_curve(p)) return false;
  }
  return true;
}

// Older images of the same source path in `dir` (another identity: the file
// was replaced), other than `keep`: removed, so that images do not pile up.
void RemoveOlderImages(const std::filesystem::path& dir, const std::string& keep, const std::string& source_path) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 7 || name.compare(name.size() - 7, 7, ".points") != 0) continue;
    if (entry.path() == keep || !entry.is_regular_file(error)) continue;
    if (DecodedImageSource(entry.path().string()) == source_path) std::filesystem::remove(entry.path(), error);
  }
}

}  // namespace

void WriteDecodedImage(const std::string& path, const Parameters& params, const engine::FileIdentity& source,
                       const std::string& source_path, ThreadPool& pool) {
  if (source_path.size() >= kMaxSourcePath) {
    throw Error(ErrorCode::kInvalidArgument, "cannot write decoded image " + path + ": the source path is longer than " +
                                                 std::to_string(kMaxSourcePath - 1) + " bytes");
  }
  Header h = BlankHeader();
  SetSource(h, source);
  const uint64_t counts[kArrays] = {params.vk.ic.size(), params.h.size(),    params.l.size(),
                                    params.a.size(),     params.b_g1.size(), params.b_g2.size()};
  std::copy(counts, counts + kArrays, h.counts);
  Lay(h);
  h.source_path_bytes = static_cast<uint32_t>(source_path.size());
  std::memcpy(h.source_path, source_path.data(), source_path.size());
  h.checksum = Checksum(h);

  AtomicFile file(path, "decoded image", 0600);
  file.Truncate(h.total_bytes);
  const VkPoints vk{params.vk.alpha_g1, params.vk.beta_g1, params.vk.beta_g2,
                    params.vk.gamma_g2, params.vk.delta_g1, params.vk.delta_g2};
  file.WriteAt(&vk, sizeof vk, h.vk_offset);
  // The arrays in slices of 8 MiB, written in parallel.
  const void* data[kArrays] = {params.vk.ic.data(), params.h.data(),    params.l.data(),
                               params.a.data(),     params.b_g1.data(), params.b_g2.data()};
  struct Slice {
    const uint8_t* data;
    uint64_t bytes, offset;
  };
  std::vector<Slice> slices;
  constexpr uint64_t kSlice = uint64_t{8} << 20;
  for (int i = 0; i < kArrays; ++i) {
    const uint64_t bytes = h.counts[i] * ElementBytes(i);
    for (uint64_t at = 0; at < bytes; at += kSlice) {
      slices.push_back({static_cast<const uint8_t*>(data[i]) + at, std::min(kSlice, bytes - at), h.offsets[i] + at});
    }
  }
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::string first_error;  // guarded by error_mutex
  pool.RunTasks(slices.size(), [&](size_t k) {
    if (failed.load()) return;
    try {
      file.WriteAt(slices[k].data, slices[k].bytes, slices[k].offset);
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!failed.exchange(true)) first_error = e.what();
    }
  });
  if (failed.load()) throw Error(ErrorCode::kIo, first_error);
  // The header last: a reader of the temporary never sees a whole header
  // over missing points (it is renamed into place only after the flush anyway).
  file.WriteAt(&h, sizeof h, 0);
  file.Commit();
  RemoveOlderImages(std::filesystem::path(path).parent_path(), path, source_path);
}

std::optional<Parameters> MapDecodedImage(const std::string& path, const engine::FileIdentity& source,
                                          ThreadPool& pool, std::string* why) {
  auto no = [&](const std::string& reason) -> std::optional<Parameters> {
    if (why) *why = path + ": " + reason;
    return std::nullopt;
  };
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return no(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return no("not a regular file");
  const std::optional<Header> header = ReadHeader(fd.get());
  if (!header) return no("shorter than its header");
  const Header& h = *header;
  if (std::string reason = Mismatch(h, source, static_cast<uint64_t>(st.st_size)); !reason.empty()) return no(reason);

  Parameters params;
  VkPoints vk;
  if (!ReadAt(fd.get(), &vk, sizeof vk, h.vk_offset)) return no("cannot read its verifying key");
  params.vk.alpha_g1 = vk.alpha_g1;
  params.vk.beta_g1 = vk.beta_g1;
  params.vk.beta_g2 = vk.beta_g2;
  params.vk.gamma_g2 = vk.gamma_g2;
  params.vk.delta_g1 = vk.delta_g1;
  params.vk.delta_g2 = vk.delta_g2;
  params.vk.ic.resize(h.counts[0]);
  if (!ReadAt(fd.get(), params.vk.ic.data(), h.counts[0] * sizeof(G1Affine), h.offsets[0])) return no("cannot read ic");

  std::vector<PageBlock> mapped;
  const bool filled = Fill(params.h, h.counts[1], fd.get(), h.offsets[1], mapped) &&
                      Fill(params.l, h.counts[2], fd.get(), h.offsets[2], mapped) &&
                      Fill(params.a, h.counts[3], fd.get(), h.offsets[3], mapped) &&
                      Fill(params.b_g1, h.counts[4], fd.get(), h.offsets[4], mapped) &&
                      Fill(params.b_g2, h.counts[5], fd.get(), h.offsets[5], mapped);
  if (!filled) return no(std::string("cannot map or read its points: ") + std::strerror(errno));
  PopulatePages(mapped, PageUse::kRead, pool);
  const bool on_curve = SampleOnCurve(params.vk.ic) && SampleOnCurve(params.h) && SampleOnCurve(params.l) &&
                        SampleOnCurve(params.a) && SampleOnCurve(params.b_g1) && SampleOnCurve(params.b_g2);
  if (!on_curve) return no("a sampled point is not on its curve (the image is damaged)");
  return params;
}

std::string DecodedImageSource(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return "";
  const std::optional<Header> h = ReadHeader(fd.get());
  if (!h || std::memcmp(h->magic, kMagic, sizeof kMagic) != 0 || h->checksum != Checksum(*h) ||
      h->source_path_bytes >= kMaxSourcePath) {
    return "";
  }
  return std::string(h->source_path, h->source_path_bytes);
}

}  // namespace zkfleet::bellman
