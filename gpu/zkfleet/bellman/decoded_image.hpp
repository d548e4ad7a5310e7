// A .params file's points as this build holds them in memory (Montgomery
// limbs, parameters.hpp), written once after the file passed its check and
// mapped by later loads instead of decoding the file again.
//
// Why: a remembered .params (engine/checked_keys.hpp) is still decoded at
// every start: big-endian coordinates to Montgomery limbs, into fresh memory
// that the kernel first has to zero (on the 2-core VM that zeroing alone was
// 46 % of the decode). An image is mapped from the page cache as it is:
// no decode, no zeroing, no copy until someone writes to a point.
//
// The image (host byte order; a cache of this host, not a format to share):
//   [0, 4096)   the header: magic, version, the in-memory sizes of a G1 and
//               a G2 point, both generators as this build holds them (a
//               build whose representation differs finds no match), the
//               identity of the source .params (FileIdentity without
//               observed_ns), the source's path (for people and for the
//               clean-up of older images of the same file), the six counts
//               and offsets, the file's total size, and a checksum of the
//               header's bytes;
//   then the verifying key's six points and ic, and h, l, a, b_g1, b_g2, each
//   array at a 4096-aligned offset, as raw memory.
//
// Trust: an image is only ever used for a file whose record says it passed
// the full check (the caller's job; BellmanKey::Load), and it is found where
// those records are: the same directory, under the same ownership rules. Its
// points are not checked again (a sample of each array is: on the curve),
// the same trust the record itself has in the .params bytes.
//
// Thread-safety: the functions are thread-safe (they use the caller's pool).
#pragma once

#include <optional>
#include <string>

#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/engine/file_identity.hpp"

namespace zkfleet::bellman {

// Writes `params` as the image of the .params file with identity `source`
// (read from `source_path`) at `path`: under a temporary name in the same
// directory (created 0600, O_EXCL, no link followed), flushed to disk
// (fdatasync) and renamed into place, so that a reader sees a whole image or
// none. Removes older images in the same directory that name the same
// source path. Throws zkfleet::Error (kIo) naming the path; the temporary is
// removed then.
void WriteDecodedImage(const std::string& path, const Parameters& params, const engine::FileIdentity& source,
                       const std::string& source_path, ThreadPool& pool);

// The parameters from the image at `path`, if it holds the points of the
// file with identity `source` and was written by a build with this
// representation: the point arrays mapped copy-on-write from the image
// (pages read in now, in parallel: MADV_POPULATE_READ), the small arrays
// copied. nullopt, with `why` set, when there is no such image (missing,
// another source or build, a header or size that does not add up, a sampled
// point off its curve); the caller decodes the .params then.
std::optional<Parameters> MapDecodedImage(const std::string& path, const engine::FileIdentity& source,
                                          ThreadPool& pool, std::string* why);

// The source path an image names ("" when `path` is no readable image):
// what WriteDecodedImage's clean-up compares. For tests and tools.
std::string DecodedImageSource(const std::string& path);

}  // namespace zkfleet::bellman
