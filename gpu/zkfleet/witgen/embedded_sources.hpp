// The generator's C sources (witgen/generator/*.c), compiled into this
// library at build time (embed_sources.cmake) and written next to each
// circuit's translation when it is built (generator_build.cpp).
#pragma once

#include <string_view>

namespace zkfleet::witgen::embedded {

std::string_view DriverC();    // generator/driver.c
std::string_view NativeFrC();  // generator/native_fr.c ("" when absent)

}  // namespace zkfleet::witgen::embedded
