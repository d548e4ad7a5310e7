# Extra build types used by CMakePresets.json:
#   Asan  - Debug with AddressSanitizer + UndefinedBehaviorSanitizer (the
#           debug-asan preset builds it with clang: 10-35 % less compile time
#           per file than gcc at these flags, and the release build already
#           has gcc's view of the code)
#   Tsan  - RelWithDebInfo with ThreadSanitizer
# -g1: line tables only (file:line in every report) at a fraction of -g's
# compile time, which is most of the ASan phase in CI (docs/testing.md).
set(_zk_asan "-O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined")
set(_zk_tsan "-O1 -g1 -fno-omit-frame-pointer -fsanitize=thread")
# project() has already made each of these an EMPTY cache entry for the
# custom build types, and set(... CACHE) does not replace an existing entry:
# without the check below every "sanitizer" build compiled with no sanitizer
# at all. An entry a user set (non-empty) is kept.
function(_zk_default_flags name value)
  if(NOT ${name})
    set(${name} "${value}" CACHE STRING "" FORCE)
  endif()
endfunction()
_zk_default_flags(CMAKE_CXX_FLAGS_ASAN "${_zk_asan}")
_zk_default_flags(CMAKE_C_FLAGS_ASAN "${_zk_asan}")
_zk_default_flags(CMAKE_EXE_LINKER_FLAGS_ASAN "-fsanitize=address,undefined")
_zk_default_flags(CMAKE_SHARED_LINKER_FLAGS_ASAN "-fsanitize=address,undefined")
_zk_default_flags(CMAKE_CXX_FLAGS_TSAN "${_zk_tsan}")
_zk_default_flags(CMAKE_C_FLAGS_TSAN "${_zk_tsan}")
_zk_default_flags(CMAKE_EXE_LINKER_FLAGS_TSAN "-fsanitize=thread")
_zk_default_flags(CMAKE_SHARED_LINKER_FLAGS_TSAN "-fsanitize=thread")
# A sanitizer build that would not sanitize is an error, not a quiet pass.
if(CMAKE_BUILD_TYPE STREQUAL "Asan" AND NOT CMAKE_CXX_FLAGS_ASAN MATCHES "-fsanitize=address")
  message(FATAL_ERROR "CMAKE_BUILD_TYPE=Asan but CMAKE_CXX_FLAGS_ASAN has no -fsanitize=address: '${CMAKE_CXX_FLAGS_ASAN}'")
endif()
if(CMAKE_BUILD_TYPE STREQUAL "Tsan" AND NOT CMAKE_CXX_FLAGS_TSAN MATCHES "-fsanitize=thread")
  message(FATAL_ERROR "CMAKE_BUILD_TYPE=Tsan but CMAKE_CXX_FLAGS_TSAN has no -fsanitize=thread: '${CMAKE_CXX_FLAGS_TSAN}'")
endif()
