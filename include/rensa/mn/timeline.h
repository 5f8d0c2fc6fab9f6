#pragma once
/// \file
/// rensa::mn's Timeline (extensions::Timeline for data-parallel training): one trace file per rank,
/// and on rank 0 a merged one with a track per rank on rank 0's clock; each summary also names the
/// slowest rank.

#include <memory>

#include "rensa/extensions/timeline.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

/// Rank R writes its own events to `<stem>.rank<R><extension>` of options.filename ("timeline.json":
/// "timeline.rank0.json", ...) in its trainer's out directory; rank 0 also writes options.filename
/// with every rank's events, each rank a process of the trace ("rank 1"), times on rank 0's clock
/// (each rank's offset measured in initialize: barriers, then every rank's clock, median of 5). Each
/// summary adds `timeline/slowest_rank` and `timeline/slowest_step` (its seconds per step).
/// Collective: every rank extends its trainer with one, with the same trigger. After an error in the
/// training loop each rank writes only its own file. ValueError for a null communicator.
std::shared_ptr<extensions::Timeline> timeline(Communicator comm, extensions::TimelineOptions options = {});

}  // namespace rensa::mn
