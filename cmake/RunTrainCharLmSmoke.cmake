# Smoke test of examples/train_char_lm: three short epochs on the default text must bring the
# validation perplexity below its first-epoch value and below 12 (the vocabulary has 76 characters;
# a unigram model of the training text scores 33 on the validation text, a smoothed bigram 15.5),
# and bad flags or texts fail with a message naming them. Run by CTest with -DTRAIN_CHAR_LM=<exe>
# -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

smoke_run(TRUE "${TRAIN_CHAR_LM}" --epoch 3 --unit 128 --batchsize 16 --bproplen 20 --dropout 0 --out result)
smoke_expect_file(result/log "the run did not write result/log")
file(READ "${WORK_DIR}/result/log" log)
string(JSON entries LENGTH "${log}")
if(NOT entries EQUAL 3)
  message(FATAL_ERROR "result/log must have one entry per epoch (3), got ${entries}:\n${log}")
endif()
string(JSON first GET "${log}" 0 val_perplexity)
string(JSON last GET "${log}" 2 val_perplexity)
if(NOT last LESS first OR NOT last LESS 12)
  message(FATAL_ERROR "validation perplexity must fall below ${first} (epoch 1) and 12, got ${last}")
endif()

smoke_run(FALSE "${TRAIN_CHAR_LM}" --bproplen 0)
if(NOT smoke_output MATCHES "--bproplen")
  message(FATAL_ERROR "--bproplen 0 must fail with a message naming the flag, got: ${smoke_output}")
endif()
smoke_run(FALSE "${TRAIN_CHAR_LM}" --text no_such_file.txt)
if(NOT smoke_output MATCHES "cannot read --text no_such_file.txt")
  message(FATAL_ERROR "a missing --text must fail naming the file, got: ${smoke_output}")
endif()
file(WRITE "${WORK_DIR}/short.txt" "too short to train on")
smoke_run(FALSE "${TRAIN_CHAR_LM}" --text short.txt)
if(NOT smoke_output MATCHES "--text short.txt is too short")
  message(FATAL_ERROR "a short --text must fail naming the file, got: ${smoke_output}")
endif()
