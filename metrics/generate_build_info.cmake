# Writes the build-info header from TEMPLATE to OUTPUT (cmake -P script).
# configure_file leaves OUTPUT untouched when the content is unchanged, so a
# new build recompiles build_info.cpp only after the commit changed.
set(ZKFLEET_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
    OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _commit)
    set(ZKFLEET_GIT_COMMIT ${_commit})
  endif()
endif()
# A release build outside git can pass the commit in the environment.
if(ZKFLEET_GIT_COMMIT STREQUAL "unknown" AND DEFINED ENV{ZKFLEET_GIT_COMMIT})
  set(ZKFLEET_GIT_COMMIT $ENV{ZKFLEET_GIT_COMMIT})
endif()
set(ZKFLEET_VERSION ${VERSION})
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
