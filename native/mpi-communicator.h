/** @file The hierarchical communicator of a launch spanning processes: shared memory within this process, MPI between processes' leaders. */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "communicator.h"

namespace jaxts {

/** Where the ranks of a multi-process launch run; shared by this process's ranks of the launch. */
struct ProcessMap {
  uint64_t global_launch = 0;     // the launch's number, equal on every process (processes launch in the same order)
  std::vector<int> rank_process;  // rank_process[global rank] = MPI rank of the process running it
  std::vector<int> local_ranks;   // global rank of each of this process's launch ranks (index: local rank)
  int self = 0;                   // this process
};

/** A communicator for global `rank` of a launch over `pm` (the caller owns it). */
Communicator* NewProcessCommunicator(int rank, std::shared_ptr<const ProcessMap> pm);

}  // namespace jaxts
