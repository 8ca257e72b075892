// How a trial's rank processes talk: c10d's Gloo process groups over a file store on this host or a
// TCP store at --master-addr; point-to-point tensors between pipeline stages; bucketed gradient
// all-reduce across data-parallel replicas, optionally overlapped with the backward pass.
//
// Ranks are laid out replica-major: global rank = replica x pp + stage, so a replica's stages are
// neighbours (on one host when ranks per host is a multiple of pp).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "bubble_gate.h"
#include "paratune/train/options.h"

namespace paratune::train {

class Comm {
 public:
  // Joins the trial's process groups as global rank `rank` (all ranks must call this): one group of
  // every rank, and one per pipeline stage across the replicas (data parallelism). `store_path`:
  // the file store (single host), ignored with options.master_addr.
  Comm(const TrainOptions& options, int rank, const std::string& store_path);
  // A trial of one process: every collective is the identity.
  Comm() = default;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int world() const { return dp_ * pp_; }
  [[nodiscard]] int dp() const { return dp_; }
  [[nodiscard]] int pp() const { return pp_; }
  [[nodiscard]] int stage() const { return rank_ % pp_; }
  [[nodiscard]] int replica() const { return rank_ / pp_; }
  [[nodiscard]] bool first_stage() const { return stage() == 0; }
  [[nodiscard]] bool last_stage() const { return stage() == pp_ - 1; }

  // Sends a float tensor to the same replica's stage `to_stage` (shape first, then data); the send
  // completes in the background: call wait_sends() before the tensor is reused or freed.
  void send(const torch::Tensor& tensor, int to_stage, int tag);
  // Blocks until it arrives (a bubble when PARATUNE_BUBBLE_DIR is set: bubble_gate.h).
  torch::Tensor receive(int from_stage, int tag);
  void wait_sends();

  // In place over the replicas of this stage (the data-parallel group): sum.
  void sum_over_replicas(torch::Tensor& tensor);
  // In place over every rank of the trial.
  void sum_over_all(torch::Tensor& tensor);
  void max_over_all(torch::Tensor& tensor);
  // Starts a sum over the replicas of this stage; wait on the returned work.
  c10::intrusive_ptr<c10d::Work> start_sum_over_replicas(torch::Tensor& tensor);

 private:
  int rank_ = 0, dp_ = 1, pp_ = 1;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> all_, replicas_;
  std::unique_ptr<BubbleGate> gate_;  // PARATUNE_BUBBLE_DIR: waits for a peer are bubbles (bubble_gate.h)
  std::vector<std::pair<c10::intrusive_ptr<c10d::Work>, torch::Tensor>> pending_sends_;
};

// Averages a stage's gradients over its replicas in buckets of about `bucket_mb` (PyTorch DDP's
// scheme, Li et al. 2020). With `overlap`, a bucket's all-reduce starts from the gradient hooks as
// soon as its last gradient is final, while the backward pass goes on; call arm() before the
// backward pass that completes the step's gradients (the last micro-batch). finish() starts what is
// left, waits, and writes the averages into the parameters' .grad.
class GradientSync {
 public:
  GradientSync(Comm& comm, std::vector<torch::Tensor> parameters, double bucket_mb, bool overlap);
  void arm();
  void finish();

 private:
  struct Bucket {
    torch::Tensor flat;
    std::vector<std::size_t> members;  // parameter indices
    int pending = 0;                   // gradients not yet final this step
    c10::intrusive_ptr<c10d::Work> work;
  };
  void gradient_ready(std::size_t parameter, const torch::Tensor& incoming);
  // Starts the all-reduces of the ready buckets in bucket order (Gloo pairs the replicas'
  // collectives by the order they are issued, so every replica must issue them alike).
  void launch_ready();

  Comm& comm_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::int64_t> offsets_;      // in its bucket's flat buffer
  std::vector<std::size_t> bucket_of_;
  std::vector<Bucket> buckets_;
  std::size_t next_to_launch_ = 0;
  bool overlap_, armed_ = false;
};

}  // namespace paratune::train
