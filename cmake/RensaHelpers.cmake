# rensa_add_test(NAME src... [LABELS l...] [LIBS lib...]): a gtest binary whose tests CTest runs one by one.
function(rensa_add_test name)
  cmake_parse_arguments(ARG "" "" "LABELS;LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE rensa::rensa rensa::testing GTest::gtest GTest::gtest_main rensa_warnings ${ARG_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS "unit;${ARG_LABELS}")
endfunction()
