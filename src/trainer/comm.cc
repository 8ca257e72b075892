#include "comm.h"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>

namespace paratune::train {
namespace {

// Gloo's transport: loopback on one host; across hosts the interface GLOO_SOCKET_IFNAME names (as
// in PyTorch) or the address the host name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const TrainOptions& o) {
  if (o.nnodes == 1) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface)
    return c10d::ProcessGroupGloo::createDeviceForInterface(iface);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                      const std::string& prefix, int rank, int size,
                                                      const TrainOptions& o) {
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(gloo_device(o));
  options->threads = 2;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
}

constexpr int kMaxDims = 6;

}  // namespace

Comm::Comm(const TrainOptions& o, int rank, const std::string& store_path) : rank_(rank), dp_(o.dp), pp_(o.pp) {
  const int world = dp_ * pp_;
  if (!o.master_addr.empty()) {
    c10d::TCPStoreOptions tcp;
    tcp.port = static_cast<std::uint16_t>(o.master_port);
    tcp.isServer = rank == 0;
    tcp.numWorkers = world;
    store_ = c10::make_intrusive<c10d::TCPStore>(o.master_addr, tcp);
  } else {
    store_ = c10::make_intrusive<c10d::FileStore>(store_path, world);
  }
  all_ = make_group(store_, "all", rank_, world, o);
  if (dp_ > 1) replicas_ = make_group(store_, fmt::format("stage{}", stage()), replica(), dp_, o);
  gate_ = std::make_unique<BubbleGate>(rank_);
}

void Comm::send(const torch::Tensor& tensor, int to_stage, int tag) {
  TORCH_CHECK(tensor.dim() <= kMaxDims, "a pipeline tensor has at most 6 dimensions");
  torch::Tensor header = torch::zeros({kMaxDims + 1}, torch::kInt64);
  header[0] = tensor.dim();
  for (int d = 0; d < tensor.dim(); ++d) header[d + 1] = tensor.size(d);
  const int to = replica() * pp_ + to_stage;
  std::vector<torch::Tensor> h{header}, data{tensor.contiguous()};
  pending_sends_.emplace_back(all_->send(h, to, 2 * tag), header);
  pending_sends_.emplace_back(all_->send(data, to, 2 * tag + 1), data[0]);
}

torch::Tensor Comm::receive(int from_stage, int tag) {
  const int from = replica() * pp_ + from_stage;
  std::vector<torch::Tensor> h{torch::empty({kMaxDims + 1}, torch::kInt64)};
  const c10::intrusive_ptr<c10d::Work> header = all_->recv(h, from, 2 * tag);
  if (gate_ && gate_->enabled() && !header->isCompleted()) {  // the peer is not there yet: a bubble
    const BubbleGate::Bubble bubble(*gate_);  // the trial is paused again however the wait ends
    header->wait();
  } else {
    header->wait();
  }
  const auto* dims = h[0].data_ptr<std::int64_t>();
  std::vector<std::int64_t> shape(dims + 1, dims + 1 + dims[0]);
  std::vector<torch::Tensor> data{torch::empty(shape, torch::kFloat32)};
  all_->recv(data, from, 2 * tag + 1)->wait();
  return data[0];
}

void Comm::wait_sends() {
  for (auto& [work, tensor] : pending_sends_) work->wait();
  pending_sends_.clear();
}

void Comm::sum_over_replicas(torch::Tensor& tensor) {
  if (dp_ == 1) return;
  std::vector<torch::Tensor> t{tensor};
  replicas_->allreduce(t)->wait();
}

c10::intrusive_ptr<c10d::Work> Comm::start_sum_over_replicas(torch::Tensor& tensor) {
  std::vector<torch::Tensor> t{tensor};
  return replicas_->allreduce(t);
}

void Comm::sum_over_all(torch::Tensor& tensor) {
  if (world() == 1) return;
  std::vector<torch::Tensor> t{tensor};
  all_->allreduce(t)->wait();
}

void Comm::max_over_all(torch::Tensor& tensor) {
  if (world() == 1) return;
  std::vector<torch::Tensor> t{tensor};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  all_->allreduce(t, max)->wait();
}

// ---- GradientSync ----

GradientSync::GradientSync(Comm& comm, std::vector<torch::Tensor> parameters, double bucket_mb, bool overlap)
    : comm_(comm), parameters_(std::move(parameters)), overlap_(overlap) {
  if (comm_.dp() == 1) return;
  offsets_.resize(parameters_.size());
  bucket_of_.resize(parameters_.size());
  // Gradients arrive roughly last layer first: buckets are filled in reverse parameter order.
  const auto cap = static_cast<std::int64_t>(bucket_mb * 1024 * 1024 / sizeof(float));
  std::int64_t filled = 0;
  for (std::size_t k = parameters_.size(); k-- > 0;) {
    const std::int64_t n = parameters_[k].numel();
    if (buckets_.empty() || (filled > 0 && filled + n > cap)) {
      buckets_.emplace_back();
      filled = 0;
    }
    offsets_[k] = filled;
    bucket_of_[k] = buckets_.size() - 1;
    buckets_.back().members.push_back(k);
    filled += n;
  }
  for (auto& b : buckets_) {
    std::int64_t total = 0;
    for (std::size_t k : b.members) total += parameters_[k].numel();
    b.flat = torch::zeros({total});
  }
  if (overlap_)
    for (std::size_t k = 0; k < parameters_.size(); ++k)
      parameters_[k].register_hook([this, k](const torch::Tensor& incoming) { gradient_ready(k, incoming); });
}

void GradientSync::arm() {
  if (comm_.dp() == 1 || !overlap_) return;
  for (auto& b : buckets_) b.pending = static_cast<int>(b.members.size());
  next_to_launch_ = 0;
  armed_ = true;
}

// The hook runs before autograd adds `incoming` to .grad: the final gradient is .grad (earlier
// micro-batches) + incoming, which this step's bucket takes now.
void GradientSync::gradient_ready(std::size_t k, const torch::Tensor& incoming) {
  if (!armed_) return;
  Bucket& b = buckets_[bucket_of_[k]];
  torch::NoGradGuard no_grad;
  torch::Tensor slot = b.flat.narrow(0, offsets_[k], parameters_[k].numel());
  const torch::Tensor& earlier = parameters_[k].grad();
  if (earlier.defined()) torch::add_out(slot, earlier.reshape(-1), incoming.reshape(-1));
  else slot.copy_(incoming.reshape(-1));
  if (--b.pending == 0) launch_ready();
}

void GradientSync::launch_ready() {
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) {
    Bucket& b = buckets_[next_to_launch_++];
    b.work = comm_.start_sum_over_replicas(b.flat);
  }
}

void GradientSync::finish() {
  if (comm_.dp() == 1) return;
  torch::NoGradGuard no_grad;
  if (!armed_) next_to_launch_ = 0;
  for (std::size_t i = next_to_launch_; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    if (armed_ && b.pending == 0) continue;  // filled by the hooks, waiting for an earlier bucket
    // Not filled by the hooks (no overlap, or a parameter that got no gradient): copy now.
    for (std::size_t k : b.members) {
      torch::Tensor slot = b.flat.narrow(0, offsets_[k], parameters_[k].numel());
      const torch::Tensor& g = parameters_[k].grad();
      if (g.defined()) slot.copy_(g.reshape(-1));
      else slot.zero_();
    }
    b.pending = 0;
  }
  launch_ready();
  const double replicas = comm_.dp();
  for (auto& b : buckets_) {
    b.work->wait();
    b.work.reset();
    b.flat.div_(replicas);
    for (std::size_t k : b.members) {
      torch::Tensor& p = parameters_[k];
      torch::Tensor averaged = b.flat.narrow(0, offsets_[k], p.numel()).view(p.sizes());
      if (p.grad().defined()) p.mutable_grad().copy_(averaged);
      else p.mutable_grad() = averaged.clone();
    }
  }
  armed_ = false;
}

}  // namespace paratune::train
