# Smoke test of bench_scaling_model under mpiexec: measure the mlp with RANKS ranks (and with one),
# predict that many ranks from the profile, time real steps, and check what bad input gets. Run by
# CTest with -DMPI_COMMAND="<mpiexec ... bench_scaling_model>" -DBIN=<bench_scaling_model>
# -DRANKS=<n> -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")
set(quick --model mlp --batchsize 8 --steps 1 --warmup 0 --repeats 1 -p prof.json)

smoke_run(TRUE ${BIN} measure ${quick})
smoke_run(TRUE ${cmd} measure ${quick})
file(READ "${WORK_DIR}/prof.json" profile)
foreach(key "compute mlp b8 t1 P1 none" "compute mlp b8 t1 P${RANKS} float16" "buckets mlp"
            "intra k${RANKS} P${RANKS} bfloat16" "bcast k${RANKS} P${RANKS}" "allgather k${RANKS} P${RANKS}"
            "beside k${RANKS} P${RANKS} float16")
  if(NOT profile MATCHES "\"${key}\"")
    message(FATAL_ERROR "prof.json lacks \"${key}\":\n${profile}")
  endif()
endforeach()

smoke_run(TRUE ${BIN} predict -p prof.json --model mlp --batchsize 8 -n 1 ${RANKS} --communicator hierarchical)
if(NOT smoke_output MATCHES "${RANKS} ranks on 1 hosts, hierarchical, float32 wire, overlap: step [0-9.]+ ms .*contention -?[0-9.]+.*efficiency [0-9.]+, of dummy [0-9.]+")
  message(FATAL_ERROR "predict printed no prediction for ${RANKS} ranks")
endif()
smoke_run(TRUE ${cmd} step --model mlp --batchsize 8 --steps 2 --warmup 1 --repeats 1 --communicator flat
          --grad-dtype bfloat16 --mode double_buffering)
if(NOT smoke_output MATCHES "[0-9.]+ s per step")
  message(FATAL_ERROR "step printed no time")
endif()

# The median of rounds' profiles: of the profile and its copy, the profile itself; added to what the
# output holds already.
file(COPY_FILE "${WORK_DIR}/prof.json" "${WORK_DIR}/prof_copy.json")
file(WRITE "${WORK_DIR}/med.json" "{\"entries\": {\"kept\": 1}}")
smoke_run(TRUE ${BIN} median -o med.json prof.json prof_copy.json)
smoke_run(TRUE ${BIN} predict -p med.json --model mlp --batchsize 8 -n ${RANKS} --communicator flat --seconds)
file(READ "${WORK_DIR}/med.json" median)
if(NOT median MATCHES "\"kept\"" OR NOT median MATCHES "\"buckets mlp\"")
  message(FATAL_ERROR "median -o must keep the output's other entries and add the inputs':\n${median}")
endif()

# Bad input: named.
smoke_run(TRUE ${BIN} measure --model mlp --batchsize 8 --steps 1 --warmup 0 --repeats 1 -p one.json)
smoke_run(FALSE ${BIN} median -o med2.json prof.json one.json)
if(NOT smoke_output MATCHES "one.json has [0-9]+ entries")
  message(FATAL_ERROR "profiles of different entries must be refused, naming the file, got: ${smoke_output}")
endif()
smoke_run(FALSE ${BIN} predict -p prof.json --model mlp --batchsize 8 -n 9 --per-host 3 --link-alpha 1e-6
          --link-beta 1e-9)
if(NOT smoke_output MATCHES "no entry \"compute mlp b8 t1 P3 float32\"")
  message(FATAL_ERROR "a missing entry must be named, got: ${smoke_output}")
endif()
smoke_run(FALSE ${BIN} predict -p prof.json --model mlp --batchsize 8 -n 4 --per-host 4 --mode sometimes)
smoke_run(FALSE ${BIN} predict -p absent.json)
file(WRITE "${WORK_DIR}/bad.json" "{\"entries\": 3}")
smoke_run(FALSE ${BIN} predict -p bad.json)
if(NOT smoke_output MATCHES "bad.json: no \"entries\" object")
  message(FATAL_ERROR "a file that is not a profile must be named, got: ${smoke_output}")
endif()
