# The ctest self-check: registers tests/selfcheck/truth_cases.cpp's cases
# with cmake/ZkfleetGtestDiscover.cmake (the same script every suite uses),
# runs ctest on them in a scratch tree and fails unless ctest reports each
# case truthfully: Passes passed, Skips skipped, every other case (failing,
# failing then skipping, failing with a skip marker in its output, skipping
# then failing in TearDown, crashing) failed, and ctest exits non-zero.
#
# Inputs (-D): CASES_EXE, DISCOVER_SCRIPT, WORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND}
    -D "TEST_EXECUTABLE=${CASES_EXE}" -D "CTEST_FILE=${WORK_DIR}/cases.cmake"
    -D "TEST_PREFIX=truth/" -D "TEST_LABELS=unit" -D "TEST_TIMEOUT=60"
    -P "${DISCOVER_SCRIPT}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "self-check: discovery failed (exit ${rc})")
endif()
file(WRITE "${WORK_DIR}/CTestTestfile.cmake" "include(\"${WORK_DIR}/cases.cmake\")\n")
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir "${WORK_DIR}"
  RESULT_VARIABLE ctest_rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")

set(problems "")
if(ctest_rc EQUAL 0)
  string(APPEND problems "ctest exited 0 although cases failed\n")
endif()
# ctest prints one line per test: "n/7 Test #n: truth/Truth.X ......   <status>"
function(expect case pattern)
  if(NOT out MATCHES "truth/${case} [.]+[^\n]*${pattern}")
    set(problems "${problems}${case} is not reported as '${pattern}'\n" PARENT_SCOPE)
  endif()
endfunction()
expect(Truth.Passes "   Passed")
expect(Truth.Skips "Skipped")
expect(Truth.Fails "\\*\\*\\*Failed")
expect(Truth.FailsThenSkips "\\*\\*\\*Failed")
expect(Truth.Crashes "(Subprocess aborted|Exception|\\*\\*\\*Failed)")
expect(Truth.FailsAndPrintsSkipMarker "\\*\\*\\*Failed")
expect(TruthFixture.SkipsThenFailsInTearDown "\\*\\*\\*Failed")
if(NOT out MATCHES "[0-9]+% tests passed, 5 tests failed out of 7")
  string(APPEND problems "the summary is not '5 tests failed out of 7'\n")
endif()
if(problems)
  message(FATAL_ERROR "ctest self-check FAILED:\n${problems}")
endif()
message("ctest self-check: a failing case (even one that also skips) is reported as failed")
