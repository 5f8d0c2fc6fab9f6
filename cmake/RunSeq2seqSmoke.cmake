# Smoke test of examples/seq2seq: three short epochs must reverse over 60% of the validation strings
# (lengths 1 to 8, equally likely) exactly. Strings of up to 3 digits are few enough to be seen in
# training; a model that only memorized those would score at most 37.5%. Bad flags fail with a
# message naming them. Run by CTest with -DSEQ2SEQ=<exe> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

smoke_run(TRUE "${SEQ2SEQ}" --epoch 3 --train-size 5000 --test-size 500 --batchsize 32 --out result)
smoke_expect_outputs(result)
file(READ "${WORK_DIR}/result/log" log)
string(JSON entries LENGTH "${log}")
math(EXPR last_index "${entries} - 1")
string(JSON accuracy GET "${log}" ${last_index} validation/main/accuracy)
if(NOT accuracy GREATER 0.6)
  message(FATAL_ERROR "the validation sequence accuracy must exceed 0.6 after 3 epochs, got ${accuracy}")
endif()

# Chainer's other optimizers by name, as ChainerMN's seq2seq takes them; a bad one is named.
smoke_run(TRUE "${SEQ2SEQ}" --epoch 1 --train-size 200 --test-size 50 --optimizer "rmspropgraves(1e-3, momentum=0.8)"
          --out other_optimizer)
smoke_run(FALSE "${SEQ2SEQ}" --optimizer "adagrad(0.1, foo=2)")
if(NOT smoke_output MATCHES "adagrad has no hyperparameter 'foo'")
  message(FATAL_ERROR "an unknown hyperparameter must fail naming it, got: ${smoke_output}")
endif()
smoke_run(FALSE "${SEQ2SEQ}" --optimizer "adamax()")
if(NOT smoke_output MATCHES "unknown optimizer 'adamax'; known: adabound")
  message(FATAL_ERROR "an unknown optimizer must fail listing the known ones, got: ${smoke_output}")
endif()

smoke_run(FALSE "${SEQ2SEQ}" --layer 0)
if(NOT smoke_output MATCHES "--layer")
  message(FATAL_ERROR "--layer 0 must fail with a message naming the flag, got: ${smoke_output}")
endif()
smoke_run(FALSE "${SEQ2SEQ}" --train-size abc)
if(NOT smoke_output MATCHES "--train-size")
  message(FATAL_ERROR "a bad --train-size must fail with a message naming the flag, got: ${smoke_output}")
endif()
