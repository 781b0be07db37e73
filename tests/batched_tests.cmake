# Registers trainrun_tests' tests with ctest, read from the binary when ctest runs (as
# gtest_discover_tests' PRE_TEST mode): each test of tests/heavy_tests.txt, and each test a
# `leave-tests` line of tests/second_stack.txt or tests/asan_selection.txt names, is one ctest
# test, named as gtest_discover_tests names it (`Group.Name`, `Prefix/Group.Name/param  # GetParam()
# = ...`); the other tests of a gtest suite run together in one process, a ctest test named
# `Suite.*` (`Suite.*#2` and on where a suite has more than kBatch of them). Every test process
# first spends ~0.65 s loading LibTorch and running its static initialisers; run one by one, the
# light tests spent more time there than in their bodies. One test of a batch alone:
# `build/tests/trainrun_tests --gtest_filter=Suite.Name`; every test alone, as ctest tests of their
# own: TRAINRUN_TESTS_ONE_BY_ONE=1 ctest ...
#
# Set by the include file tests/CMakeLists.txt generates: TRAINRUN_TEST_EXE, TRAINRUN_TEST_DIR
# (the working directory), TRAINRUN_TEST_SOURCE (the source tree, for the lists).
set(kBatch 24)

if(NOT EXISTS "${TRAINRUN_TEST_EXE}")
  add_test(trainrun_tests_NOT_BUILT trainrun_tests_NOT_BUILT)
  return()
endif()
execute_process(COMMAND "${TRAINRUN_TEST_EXE}" --gtest_list_tests
  WORKING_DIRECTORY "${TRAINRUN_TEST_DIR}" OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TRAINRUN_TEST_EXE} --gtest_list_tests exited with ${rc}")
endif()

# The patterns of the tests that run alone.
set(alone)
foreach(list heavy_tests.txt second_stack.txt asan_selection.txt)
  file(STRINGS "${TRAINRUN_TEST_SOURCE}/tests/${list}" lines)
  foreach(line IN LISTS lines)
    if(list STREQUAL "heavy_tests.txt" AND NOT line MATCHES "^#" AND NOT line STREQUAL "")
      list(APPEND alone "${line}")
    elseif(line MATCHES "^leave-tests (.*)$")
      list(APPEND alone "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()

function(add_gtest name filter)
  add_test("${name}" "${TRAINRUN_TEST_EXE}" "--gtest_filter=${filter}" --gtest_also_run_disabled_tests)
  set_tests_properties("${name}" PROPERTIES WORKING_DIRECTORY "${TRAINRUN_TEST_DIR}" TIMEOUT 900 ${ARGN})
endfunction()

# gtest's listing: `Suite.` at the margin, then `  Name` (a parameterised one `  Name  # GetParam() = v`).
# Semicolons would split CMake's lists: the listing's are escaped first.
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" listing "${listing}")
set(suites)
foreach(line IN LISTS listing)
  if(line MATCHES "^([^ #]+)\\.")
    set(suite "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^  ([^ ]+)(.*)$")
    set(test "${suite}.${CMAKE_MATCH_1}")
    set(name "${test}${CMAKE_MATCH_2}")  # gtest_discover_tests keeps the `  # GetParam() = ...`
    set(runs_alone "$ENV{TRAINRUN_TESTS_ONE_BY_ONE}")
    foreach(pattern IN LISTS alone)
      if(name MATCHES "${pattern}")
        set(runs_alone TRUE)
        break()
      endif()
    endforeach()
    if(runs_alone)
      add_gtest("${name}" "${test}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
      set(split_${suite} TRUE)
    else()
      if(NOT DEFINED batch_${suite})
        list(APPEND suites "${suite}")
      endif()
      list(APPEND batch_${suite} "${test}")
    endif()
  endif()
endforeach()

# A batch passes when each of its tests passes or is skipped (gtest's exit code); a skip regex
# would let a failure in the same process pass, so batches have none.
foreach(suite IN LISTS suites)
  list(LENGTH batch_${suite} n)
  if(n LESS_EQUAL kBatch)
    if(NOT split_${suite})
      add_gtest("${suite}.*" "${suite}.*")
    else()
      list(JOIN batch_${suite} ":" filter)
      add_gtest("${suite}.*" "${filter}")
    endif()
    continue()
  endif()
  math(EXPR parts "(${n} + ${kBatch} - 1) / ${kBatch}")
  foreach(part RANGE 1 ${parts})
    math(EXPR first "(${part} - 1) * ${n} / ${parts}")
    math(EXPR count "${part} * ${n} / ${parts} - ${first}")
    list(SUBLIST batch_${suite} ${first} ${count} some)
    list(JOIN some ":" filter)
    add_gtest("${suite}.*#${part}" "${filter}")
  endforeach()
endforeach()
