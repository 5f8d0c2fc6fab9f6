# Smoke test of a model-parallel example (train_mnist_model_parallel, train_mnist_dual_parallel,
# parallel_convolution): one short epoch on a slice of Fashion-MNIST must finish and write rank 0's
# log with the validation accuracy. Run by CTest with -DMPI_COMMAND="<mpiexec ... example>"
# (space-separated) -DWORK_DIR=<dir>.
include(${CMAKE_CURRENT_LIST_DIR}/SmokeChecks.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
separate_arguments(cmd UNIX_COMMAND "${MPI_COMMAND}")
smoke_run(TRUE ${cmd} --epoch 1 --limit 800 --batchsize 100 --unit 32 --timeout 120 --out result)
smoke_expect_outputs(result)
