# Extra build types used by CMakePresets.json:
#   Asan  - Debug with AddressSanitizer + UndefinedBehaviorSanitizer
#   Tsan  - RelWithDebInfo with ThreadSanitizer
set(_zk_asan "-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined")
set(_zk_tsan "-O1 -g -fno-omit-frame-pointer -fsanitize=thread")
set(CMAKE_CXX_FLAGS_ASAN "${_zk_asan}" CACHE STRING "")
set(CMAKE_C_FLAGS_ASAN "${_zk_asan}" CACHE STRING "")
set(CMAKE_EXE_LINKER_FLAGS_ASAN "-fsanitize=address,undefined" CACHE STRING "")
set(CMAKE_SHARED_LINKER_FLAGS_ASAN "-fsanitize=address,undefined" CACHE STRING "")
set(CMAKE_CXX_FLAGS_TSAN "${_zk_tsan}" CACHE STRING "")
set(CMAKE_C_FLAGS_TSAN "${_zk_tsan}" CACHE STRING "")
set(CMAKE_EXE_LINKER_FLAGS_TSAN "-fsanitize=thread" CACHE STRING "")
set(CMAKE_SHARED_LINKER_FLAGS_TSAN "-fsanitize=thread" CACHE STRING "")
