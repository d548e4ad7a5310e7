// The generator's sources (witgen/generator/), compiled into this library at
// build time (embed_sources.cmake): the C files are written next to each
// circuit's translation when it is built (generator_build.cpp), the script is
// the first-sight tier node runs (witness_generator.cpp).
#pragma once

#include <span>
#include <string_view>

namespace zkfleet::witgen::embedded {

struct File {
  std::string_view name;  // as native_fr.c includes it, e.g. "native_fr_limbs.h"
  std::string_view text;
};

std::string_view DriverC();    // generator/driver.c
std::string_view NativeFrC();  // generator/native_fr.c ("" when absent)
// The headers native_fr.c includes from generator/ (and those they include),
// written beside it; none when native_fr.c is absent.
std::span<const File> NativeFrHeaders();
std::string_view GeneratorJs();  // generator/generator.js

}  // namespace zkfleet::witgen::embedded
