# The package test (ctest -L package): installs the build tree into a fresh prefix, builds the
# consumer project tests/package against it with the same generator and compiler, and runs it.
# cmake -DBUILD_DIR=... -DPACKAGE_DIR=... -DWORK_DIR=... -DGENERATOR=... [-DMAKE_PROGRAM=...]
#       -DCXX_COMPILER=... [-DCONFIG=...] [-DREADME=...] -P RunPackageTest.cmake
foreach(var BUILD_DIR PACKAGE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "RunPackageTest: ${var} is not set")
  endif()
endforeach()
if(NOT CONFIG)
  set(CONFIG Release)
endif()
set(prefix ${WORK_DIR}/prefix)

# The README shows the consumer's main.cpp; keep the two identical.
if(README)
  file(READ ${README} readme_text)
  file(READ ${PACKAGE_DIR}/main.cpp main_text)
  string(FIND "${readme_text}" "${main_text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "package test: ${README} does not show ${PACKAGE_DIR}/main.cpp as it is")
  endif()
endif()
set(consumer ${WORK_DIR}/build)

# Runs a command, echoing it; any failure fails the test with the step's name.
function(run step)
  string(REPLACE ";" " " line "${ARGN}")
  message(STATUS "package test: ${step}: ${line}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${step} failed (${rc})")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run(install ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${CONFIG})

# The exported targets must not drag the library's private dependencies into consumers.
file(GLOB_RECURSE target_files ${prefix}/*/rensaTargets*.cmake)
if(NOT target_files)
  message(FATAL_ERROR "package test: no rensaTargets*.cmake under ${prefix}")
endif()
foreach(f ${target_files})
  file(READ ${f} text)
  if(text MATCHES "OpenMP|openblas|dnnl|gomp")
    message(FATAL_ERROR "package test: ${f} mentions a private dependency (${CMAKE_MATCH_0})")
  endif()
endforeach()

set(make_program)
if(MAKE_PROGRAM)
  set(make_program -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
# No package registry: only the fresh prefix may provide rensa.
run(configure ${CMAKE_COMMAND} -S ${PACKAGE_DIR} -B ${consumer} -G ${GENERATOR} ${make_program}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${CONFIG} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS ${consumer}/CMakeCache.txt rensa_dir REGEX "^rensa_DIR:")
string(FIND "${rensa_dir}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "package test: rensa was found outside ${prefix}: ${rensa_dir}")
endif()
run(build ${CMAKE_COMMAND} --build ${consumer} --config ${CONFIG})
if(EXISTS ${consumer}/${CONFIG}/rensa_package_test)
  set(program ${consumer}/${CONFIG}/rensa_package_test)
else()
  set(program ${consumer}/rensa_package_test)
endif()
run(run ${program})
