// The generator's sources (witgen/generator/), compiled into this library at
// build time (embed_sources.cmake): the C files are written next to each
// circuit's translation when it is built (generator_build.cpp), the script is
// the first-sight tier node runs (witness_generator.cpp).
#pragma once

#include <string_view>

namespace zkfleet::witgen::embedded {

std::string_view DriverC();    // generator/driver.c
std::string_view NativeFrC();  // generator/native_fr.c ("" when absent)
std::string_view GeneratorJs();  // generator/generator.js

}  // namespace zkfleet::witgen::embedded
