// A random pipeline problem for property tests (pipeline_test.cc, harvest_test.cc): 1-6 ranks,
// every schedule and gradient-sync placement, random pass, transfer and reduction times, memory.
#pragma once

#include <random>

#include "paratune/sim/pipeline.h"

namespace paratune::sim {

inline PipelineProblem random_problem(std::mt19937& rng) {
  std::uniform_int_distribution<int> ranks(1, 6), chunks(2, 3), micro(1, 5), kind(0, 7), sync(0, 2), coin(0, 1);
  std::uniform_real_distribution<double> time(0.1, 2.0), link(0.0, 0.5);
  const Schedule schedules[] = {Schedule::kOneFOneB,   Schedule::kGPipe,       Schedule::kInterleaved1F1B,
                                Schedule::kZeroBubbleH1, Schedule::kInterleavedZeroBubble, Schedule::kZeroBubbleV,
                                Schedule::kDualPipeV,  Schedule::kDualPipe};
  PipelineProblem pb;
  pb.schedule = schedules[kind(rng)];
  int p = ranks(rng), v = 1;
  switch (pb.schedule) {
    case Schedule::kInterleaved1F1B:
    case Schedule::kInterleavedZeroBubble:
      v = chunks(rng);
      pb.microbatches = p * micro(rng);
      break;
    case Schedule::kZeroBubbleV:
      v = 2;
      pb.microbatches = micro(rng) * 3 - 2;
      break;
    case Schedule::kDualPipeV:
      v = 2;
      pb.microbatches = 2 * p + micro(rng) - 1;
      break;
    case Schedule::kDualPipe:
      p = 2 * ((p + 1) / 2);
      v = 2;
      pb.microbatches = 2 * (p + micro(rng) - 1);
      break;
    default: pb.microbatches = micro(rng) * 3 - 2;
  }
  pb.grad_sync = static_cast<GradSync>(sync(rng));
  pb.blocking_p2p = coin(rng) == 1;
  pb.overlap_window = 0.8;
  pb.iteration_overhead_s = 0.01;
  for (int r = 0; r < p; ++r) {
    StageCost s;
    s.p2p_next_s = link(rng);
    s.optimizer_s = time(rng) / 10;
    s.param_gather_s = coin(rng) ? time(rng) / 10 : 0;
    s.memory_capacity_bytes = 100;
    s.static_memory_bytes = 10;
    for (int c = 0; c < v; ++c) {
      ChunkCost cc;
      cc.forward_s = time(rng);
      cc.backward_input_s = time(rng);
      cc.backward_weight_s = time(rng);
      cc.activation_bytes = time(rng);
      cc.grad_sync_s = time(rng) / 4;
      cc.grad_sync_buckets = 1 + coin(rng) * 3;
      s.chunks.push_back(cc);
    }
    pb.stages.push_back(s);
  }
  return pb;
}

}  // namespace paratune::sim
