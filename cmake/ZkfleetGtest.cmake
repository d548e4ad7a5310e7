# zkfleet_add_gtest(NAME LABEL <unit|integration|gpu> SOURCES ... [LIBS ...]
#                   [TIMEOUT s] [PROCESSORS n] [ENVIRONMENT VAR=value ...])
#
# Builds a GoogleTest binary and registers ONE ctest entry PER TEST CASE
# (named NAME/Suite.Case), discovered after each build by
# ZkfleetGtestDiscover.cmake. The binary links zkfleet_gtest_main, which
# exits 77 when every selected case skipped and none failed; ctest reads 77
# as "skipped" (SKIP_RETURN_CODE) and any other non-zero exit as "failed".
# No output text is matched, so a case that fails and then skips is a
# failure (tests/selfcheck proves it).
#
# TIMEOUT applies to each case (times ZKFLEET_TEST_TIMEOUT_SCALE, which the
# sanitizer presets set); PROCESSORS tells `ctest -j` how many cores
# one case keeps busy (multi-process integration tests use more than one).
# NO_MATH marks a suite whose own sources do no field or curve arithmetic
# (the fleet, broker, worker, client and format suites): its sources compile
# at -O1 in the release build (half the time of -O3: a 416-line fleet test
# took 16 s at -O3, 8 s at -O1) and at -O0 under ASan (half the time of -O1
# there), while the libraries it tests keep the build's level. Suites that
# instantiate the math templates in their own sources keep it too, or their
# cases would run several times slower.
# Shared by the main build and bench/gpu/standalone.

set(ZKFLEET_GTEST_DIR ${CMAKE_CURRENT_LIST_DIR})
get_filename_component(_zk_gtest_root ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(ZKFLEET_GTEST_MAIN_SOURCE ${_zk_gtest_root}/tests/testutil/gtest_main.cpp)
if(NOT DEFINED ZKFLEET_FIXTURES_DIR)
  set(ZKFLEET_FIXTURES_DIR ${_zk_gtest_root}/tests/fixtures)
endif()
set(ZKFLEET_NODE_BIN ${_zk_gtest_root}/node_modules/.bin)

if(NOT TARGET zkfleet_gtest_main)
  add_library(zkfleet_gtest_main STATIC ${ZKFLEET_GTEST_MAIN_SOURCE})
  target_link_libraries(zkfleet_gtest_main PUBLIC GTest::gtest)
endif()

# Registers the cases of an already-built gtest TARGET (used by
# zkfleet_add_gtest, and by tests/selfcheck on its deliberately bad cases).
function(zkfleet_discover_gtest_cases target)
  cmake_parse_arguments(T "" "PREFIX;TIMEOUT;PROCESSORS;CTEST_FILE;SERIAL" "LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_PREFIX)
    set(T_PREFIX "${target}/")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # Sanitizer builds run several times slower: their presets scale timeouts.
  if(ZKFLEET_TEST_TIMEOUT_SCALE)
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * ${ZKFLEET_TEST_TIMEOUT_SCALE}")
  endif()
  if(NOT T_PROCESSORS)
    set(T_PROCESSORS 1)
  endif()
  if(NOT T_CTEST_FILE)
    set(T_CTEST_FILE ${CMAKE_CURRENT_BINARY_DIR}/${target}_cases.cmake)
  endif()
  string(REPLACE ";" "|" labels "${T_LABELS}")
  string(REPLACE ";" "|" env "${T_ENVIRONMENT}")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND}
      -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
      -D "CTEST_FILE=${T_CTEST_FILE}"
      -D "TEST_PREFIX=${T_PREFIX}"
      -D "TEST_LABELS=${labels}"
      -D "TEST_TIMEOUT=${T_TIMEOUT}"
      -D "TEST_PROCESSORS=${T_PROCESSORS}"
      -D "TEST_SERIAL=${T_SERIAL}"
      -D "TEST_ENVIRONMENT=${env}"
      -P ${ZKFLEET_GTEST_DIR}/ZkfleetGtestDiscover.cmake
    BYPRODUCTS ${T_CTEST_FILE}
    VERBATIM)
  # Until the binary is built, ctest shows one failing placeholder entry
  # rather than silently running nothing.
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake)
  file(WRITE ${include_file}
    "if(EXISTS \"${T_CTEST_FILE}\")\n"
    "  include(\"${T_CTEST_FILE}\")\n"
    "else()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()

# The optimisation level of test code that does no arithmetic (NO_MATH).
function(zkfleet_no_math_options target)
  if(CMAKE_BUILD_TYPE STREQUAL "Asan")
    target_compile_options(${target} PRIVATE -O0)
  elseif(CMAKE_BUILD_TYPE STREQUAL "Release")
    target_compile_options(${target} PRIVATE -O1)
  endif()
endfunction()

# SERIAL: a regex of Suite.Case names that must run alone (RUN_SERIAL): cases
# that judge how much CPU a child process got, which ctest -j beside them
# takes away.
function(zkfleet_add_gtest name)
  cmake_parse_arguments(T "NO_MATH" "LABEL;TIMEOUT;PROCESSORS;SERIAL" "SOURCES;LIBS;ENVIRONMENT" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  # Test files keep their helpers in anonymous namespaces under common names
  # (Fixed, Load, ...): each compiles alone even where the libraries are a
  # unity build (the sanitizer and fuzz presets).
  set_target_properties(${name} PROPERTIES UNITY_BUILD OFF)
  if(T_NO_MATH)
    zkfleet_no_math_options(${name})
  endif()
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest zkfleet_gtest_main)
  target_compile_definitions(${name} PRIVATE
    ZKFLEET_FIXTURES_DIR="${ZKFLEET_FIXTURES_DIR}"
    ZKFLEET_NODE_BIN="${ZKFLEET_NODE_BIN}"
    ZKFLEET_BINARY_DIR="${PROJECT_BINARY_DIR}"
    ZKFLEET_SOURCE_DIR="${_zk_gtest_root}")
  zkfleet_discover_gtest_cases(${name} LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
    PROCESSORS ${T_PROCESSORS} SERIAL "${T_SERIAL}" ENVIRONMENT ${T_ENVIRONMENT})
endfunction()
