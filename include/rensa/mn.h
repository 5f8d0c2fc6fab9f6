#pragma once
/// \file
/// The umbrella header of rensa::mn, the multi-node layer (link rensa::mn; programs run under mpirun).

#include "rensa/mn/allreduce_persistent.h"
#include "rensa/mn/batch_norm_statistics.h"
#include "rensa/mn/batch_normalization.h"
#include "rensa/mn/communicator.h"
#include "rensa/mn/early_stopping.h"
#include "rensa/mn/empty_dataset.h"
#include "rensa/mn/evaluator.h"
#include "rensa/mn/functions.h"
#include "rensa/mn/generic_evaluator.h"
#include "rensa/mn/iterators.h"
#include "rensa/mn/launch.h"
#include "rensa/mn/multi_node_chain_list.h"
#include "rensa/mn/multi_node_optimizer.h"
#include "rensa/mn/n_step_rnn.h"
#include "rensa/mn/object.h"
#include "rensa/mn/scatter.h"
#include "rensa/mn/snapshot.h"
#include "rensa/mn/timeline.h"
