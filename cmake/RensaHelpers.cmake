# rensa_add_test(NAME src... [LABELS l...] [LIBS lib...]): a gtest binary whose tests CTest runs one by one.
function(rensa_add_test name)
  cmake_parse_arguments(ARG "" "" "LABELS;LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE rensa::rensa rensa::testing GTest::gtest GTest::gtest_main rensa_warnings ${ARG_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS "unit;${ARG_LABELS}")
endfunction()

# ---- MPI jobs ---------------------------------------------------------------------------------
# How every MPI job of the project starts (tests, examples' smoke tests): Open MPI refuses to run
# as root without the two ALLOW variables, and more ranks than cores need oversubscription (with
# yielding, so waiting ranks leave the cores to the working ones). UCX does not start in
# containers, so the ob1 layer with shared memory and TCP is forced.
set(RENSA_MPIEXEC_FLAGS --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader,tcp
    CACHE STRING "Flags rensa's MPI tests pass to mpiexec after the rank count")
set(RENSA_MPIEXEC_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1)
# Under the sanitizers, MPI jobs check for leaks with Open MPI's own suppressed. Open MPI's plugins
# have no frame pointers: full unwinding lets an allocation's stack reach the Open MPI function the
# suppressions name.
if(RENSA_SANITIZE)
  list(APPEND RENSA_MPIEXEC_ENV "ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0"
       "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan-openmpi.supp:print_suppressions=0")
endif()

# rensa_mpi_command(<out-var> <np> <program> [args...]): the command line that runs <program> with
# <np> ranks (set RENSA_MPIEXEC_ENV in the test's environment too).
function(rensa_mpi_command out np)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${RENSA_MPIEXEC_FLAGS} ${MPIEXEC_PREFLAGS} ${ARGN}
      PARENT_SCOPE)
endfunction()

# rensa_add_mpi_test(<name> src... [NP n...] [TIMEOUT s] [LIBS lib...] [SPAWNS]): a gtest binary
# (tests/mn/mpi_test_main.cpp replaces gtest_main: a failure on any rank fails every rank) that
# CTest runs once per rank count (default 2 and 4) as mn.<name without test_>.np<n>, label mn.
# With SPAWNS the binary is not started under mpiexec: it starts its own MPI jobs, and gets the rank
# count in RENSA_MN_TEST_NP and the launcher in RENSA_MPIEXEC / RENSA_MPIEXEC_FLAGS (space-separated).
function(rensa_add_mpi_test name)
  cmake_parse_arguments(ARG "SPAWNS" "TIMEOUT" "NP;LIBS" ${ARGN})
  if(NOT ARG_NP)
    set(ARG_NP 2 4)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE rensa::mn rensa::testing GTest::gtest rensa_warnings ${ARG_LIBS})
  if(ARG_SPAWNS)
    target_link_libraries(${name} PRIVATE GTest::gtest_main)
  else()
    target_link_libraries(${name} PRIVATE rensa_mpi_test_main)
  endif()
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  string(REGEX REPLACE "^test_" "" short ${name})
  foreach(np ${ARG_NP})
    if(ARG_SPAWNS)
      string(REPLACE ";" " " flags "${RENSA_MPIEXEC_FLAGS}")
      add_test(NAME mn.${short}.np${np} COMMAND $<TARGET_FILE:${name}>)
      set(env ${RENSA_MPIEXEC_ENV} RENSA_MN_TEST_NP=${np} RENSA_MPIEXEC=${MPIEXEC_EXECUTABLE}
          "RENSA_MPIEXEC_FLAGS=${flags}")
    else()
      rensa_mpi_command(cmd ${np} $<TARGET_FILE:${name}>)
      add_test(NAME mn.${short}.np${np} COMMAND ${cmd})
      set(env ${RENSA_MPIEXEC_ENV})
    endif()
    # PROCESSORS keeps `ctest -j` from stacking several jobs' ranks on the same cores.
    set_tests_properties(mn.${short}.np${np} PROPERTIES LABELS mn TIMEOUT ${ARG_TIMEOUT} PROCESSORS ${np}
                         ENVIRONMENT "${env}")
  endforeach()
endfunction()
