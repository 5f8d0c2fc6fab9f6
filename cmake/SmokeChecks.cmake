# Checks shared by the example smoke tests (cmake -P scripts). They run commands in WORK_DIR.

# smoke_run(<expect_ok> <command>...): runs the command, prints its output and leaves it in
# `smoke_output`; fails the test when the command fails and expect_ok is true, or succeeds and it is
# false.
function(smoke_run expect_ok)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 280)
  message("${out}${err}")
  set(smoke_output "${out}${err}" PARENT_SCOPE)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "should have failed: ${ARGN}")
  endif()
endfunction()

# smoke_expect_outputs(<dir> <file>...): the files exist under WORK_DIR/dir, and dir/log has the
# validation accuracy.
function(smoke_expect_outputs dir)
  foreach(f log ${ARGN})
    if(NOT EXISTS "${WORK_DIR}/${dir}/${f}")
      message(FATAL_ERROR "the run did not write ${dir}/${f}")
    endif()
  endforeach()
  file(READ "${WORK_DIR}/${dir}/log" log)
  if(NOT log MATCHES "validation/main/accuracy")
    message(FATAL_ERROR "${dir}/log lacks validation/main/accuracy:\n${log}")
  endif()
endfunction()

# smoke_expect_file(<path> <message>): fails with the message unless WORK_DIR/path exists.
function(smoke_expect_file path what)
  if(NOT EXISTS "${WORK_DIR}/${path}")
    message(FATAL_ERROR "${what}")
  endif()
endfunction()
