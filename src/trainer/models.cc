#include "models.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

namespace paratune::train {
namespace {

namespace nn = torch::nn;

constexpr int kImageSide = 28, kClasses = 10, kBytes = 256;

void normal_init(torch::Tensor& weight, double std) {
  torch::NoGradGuard no_grad;
  weight.normal_(0, std);
}

// fan_in of a Linear or Conv2d weight: every input it sums over.
double fan_in(const torch::Tensor& weight) { return static_cast<double>(weight.numel() / weight.size(0)); }

// ---- MLP: [Linear + ReLU + dropout] per hidden width, then a Linear classifier. ----

class DenseUnit final : public Unit {
 public:
  DenseUnit(int in, int out, bool relu, double dropout, double init_scale, bool flatten)
      : relu_(relu), flatten_(flatten), dropout_p_(dropout), in_(in), out_(out) {
    linear_ = register_module("linear", nn::Linear(in, out));
    normal_init(linear_->weight, init_scale * std::sqrt((relu ? 2.0 : 1.0) / in));
    nn::init::zeros_(linear_->bias);
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = flatten_ ? input.flatten(1) : input;
    x = linear_->forward(x);
    if (relu_) x = torch::relu(x);
    if (relu_ && dropout_p_ > 0) x = torch::dropout(x, dropout_p_, is_training());
    return x;
  }
  double forward_flops_per_sample() const override { return 2.0 * in_ * out_; }
  std::string describe() const override { return fmt::format("linear {}->{}{}", in_, out_, relu_ ? " relu" : ""); }

 private:
  nn::Linear linear_{nullptr};
  bool relu_, flatten_;
  double dropout_p_;
  int in_, out_;
};

// ---- CNN: a stem, one ResNet basic block per channel count (He et al. 2016), pool + classifier. ----

nn::Conv2d conv3x3(int in, int out, int stride, double init_scale) {
  auto conv = nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
  normal_init(conv->weight, init_scale * std::sqrt(2.0 / fan_in(conv->weight)));
  return conv;
}

class StemUnit final : public Unit {
 public:
  StemUnit(int channels, double init_scale) : channels_(channels) {
    conv_ = register_module("conv", conv3x3(1, channels, 1, init_scale));
    norm_ = register_module("norm", nn::BatchNorm2d(channels));
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    return torch::relu(norm_->forward(conv_->forward(input)));
  }
  double forward_flops_per_sample() const override { return 2.0 * 9 * channels_ * kImageSide * kImageSide; }
  std::string describe() const override { return fmt::format("stem conv3x3 1->{} bn relu", channels_); }

 private:
  nn::Conv2d conv_{nullptr};
  nn::BatchNorm2d norm_{nullptr};
  int channels_;
};

class ResidualUnit final : public Unit {
 public:
  // `side`: the input's height and width.
  ResidualUnit(int in, int out, int stride, int side, double init_scale)
      : in_(in), out_(out), stride_(stride), out_side_((side + stride - 1) / stride) {
    conv1_ = register_module("conv1", conv3x3(in, out, stride, init_scale));
    norm1_ = register_module("norm1", nn::BatchNorm2d(out));
    conv2_ = register_module("conv2", conv3x3(out, out, 1, init_scale));
    norm2_ = register_module("norm2", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      shortcut_ = register_module("shortcut", nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
      normal_init(shortcut_->weight, init_scale * std::sqrt(1.0 / in));
      shortcut_norm_ = register_module("shortcut_norm", nn::BatchNorm2d(out));
    }
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = torch::relu(norm1_->forward(conv1_->forward(input)));
    x = norm2_->forward(conv2_->forward(x));
    const torch::Tensor skip = shortcut_ ? shortcut_norm_->forward(shortcut_->forward(input)) : input;
    return torch::relu(x + skip);
  }
  double forward_flops_per_sample() const override {
    const double pixels = 1.0 * out_side_ * out_side_;
    return 2.0 * pixels * (9.0 * in_ * out_ + 9.0 * out_ * out_ + (shortcut_ ? 1.0 * in_ * out_ : 0.0));
  }
  std::string describe() const override {
    return fmt::format("residual block {}->{} stride {} ({}x{})", in_, out_, stride_, out_side_, out_side_);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, shortcut_{nullptr};
  nn::BatchNorm2d norm1_{nullptr}, norm2_{nullptr}, shortcut_norm_{nullptr};
  int in_, out_, stride_, out_side_;
};

class PoolClassifierUnit final : public Unit {
 public:
  PoolClassifierUnit(int channels, double dropout, double init_scale) : channels_(channels), dropout_p_(dropout) {
    linear_ = register_module("linear", nn::Linear(channels, kClasses));
    normal_init(linear_->weight, init_scale * std::sqrt(1.0 / channels));
    nn::init::zeros_(linear_->bias);
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = input.mean({2, 3});  // global average pool
    if (dropout_p_ > 0) x = torch::dropout(x, dropout_p_, is_training());
    return linear_->forward(x);
  }
  double forward_flops_per_sample() const override { return 2.0 * channels_ * kClasses; }
  std::string describe() const override { return fmt::format("pool + linear {}->{}", channels_, kClasses); }

 private:
  nn::Linear linear_{nullptr};
  int channels_;
  double dropout_p_;
};

// ---- GPT: token + position embedding, pre-norm decoder blocks, final norm + output projection. ----

class EmbeddingUnit final : public Unit {
 public:
  EmbeddingUnit(int d_model, int seq_len, double dropout, double init_scale)
      : d_model_(d_model), seq_len_(seq_len), dropout_p_(dropout) {
    tokens_ = register_module("tokens", nn::Embedding(kBytes, d_model));
    positions_ = register_parameter("positions", torch::empty({seq_len, d_model}));
    normal_init(tokens_->weight, 0.02 * init_scale);
    normal_init(positions_, 0.02 * init_scale);
  }
  torch::Tensor forward(const torch::Tensor& input) override {  // input: [B, T] byte values
    const std::int64_t t = input.size(1);
    torch::Tensor x = tokens_->forward(input) + positions_.slice(0, 0, t);
    if (dropout_p_ > 0) x = torch::dropout(x, dropout_p_, is_training());
    return x;
  }
  double forward_flops_per_sample() const override { return 1.0 * seq_len_ * d_model_; }  // the addition
  std::string describe() const override { return fmt::format("embedding {}x{} + positions", kBytes, d_model_); }
  torch::Tensor& token_weight() { return tokens_->weight; }

 private:
  nn::Embedding tokens_{nullptr};
  torch::Tensor positions_;
  int d_model_, seq_len_;
  double dropout_p_;
};

class DecoderBlockUnit final : public Unit {
 public:
  DecoderBlockUnit(int d_model, int heads, int seq_len, int mlp_ratio, double dropout, double init_scale, int layers)
      : d_model_(d_model), heads_(heads), seq_len_(seq_len), mlp_ratio_(mlp_ratio), dropout_p_(dropout) {
    norm1_ = register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({d_model})));
    qkv_ = register_module("qkv", nn::Linear(d_model, 3 * d_model));
    out_ = register_module("out", nn::Linear(d_model, d_model));
    norm2_ = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({d_model})));
    up_ = register_module("up", nn::Linear(d_model, mlp_ratio * d_model));
    down_ = register_module("down", nn::Linear(mlp_ratio * d_model, d_model));
    const double std = 0.02 * init_scale, residual_std = std / std::sqrt(2.0 * layers);
    for (auto* linear : {&qkv_, &up_}) normal_init((*linear)->weight, std);
    for (auto* linear : {&out_, &down_}) normal_init((*linear)->weight, residual_std);
    for (auto* linear : {&qkv_, &out_, &up_, &down_}) nn::init::zeros_((*linear)->bias);
  }
  torch::Tensor forward(const torch::Tensor& input) override {  // [B, T, d]
    const std::int64_t b = input.size(0), t = input.size(1), hd = d_model_ / heads_;
    // Causal self-attention (Vaswani et al. 2017), heads split from the fused projection.
    auto qkv = qkv_->forward(norm1_->forward(input)).view({b, t, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    const torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, T, hd]
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
    const torch::Tensor future = torch::ones({t, t}, torch::kBool).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    torch::Tensor attention = torch::softmax(scores, -1);
    if (dropout_p_ > 0) attention = torch::dropout(attention, dropout_p_, is_training());
    torch::Tensor mixed = torch::matmul(attention, v).permute({0, 2, 1, 3}).reshape({b, t, d_model_});
    mixed = out_->forward(mixed);
    if (dropout_p_ > 0) mixed = torch::dropout(mixed, dropout_p_, is_training());
    torch::Tensor x = input + mixed;
    torch::Tensor h = down_->forward(torch::gelu(up_->forward(norm2_->forward(x))));
    if (dropout_p_ > 0) h = torch::dropout(h, dropout_p_, is_training());
    return x + h;
  }
  double forward_flops_per_sample() const override {
    const double t = seq_len_, d = d_model_;
    // Projections 2·T·(3d² + d² + 2·r·d²), attention scores and mixing 2·2·T²·d.
    return 2 * t * (4 * d * d + 2.0 * mlp_ratio_ * d * d) + 4 * t * t * d;
  }
  std::string describe() const override {
    return fmt::format("decoder block d={} heads={} mlp={}", d_model_, heads_, mlp_ratio_ * d_model_);
  }

 private:
  nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  nn::Linear qkv_{nullptr}, out_{nullptr}, up_{nullptr}, down_{nullptr};
  int d_model_, heads_, seq_len_, mlp_ratio_;
  double dropout_p_;
};

class OutputUnit final : public Unit {
 public:
  // `tied`: the token embedding's weight [V, d], else a weight of its own.
  OutputUnit(int d_model, int seq_len, const torch::Tensor& tied, double init_scale)
      : d_model_(d_model), seq_len_(seq_len), tied_(tied.defined()) {
    norm_ = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({d_model})));
    if (tied_) {
      weight_ = register_parameter("weight", tied);
    } else {
      weight_ = register_parameter("weight", torch::empty({kBytes, d_model}));
      normal_init(weight_, 0.02 * init_scale);
    }
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    return torch::matmul(norm_->forward(input), weight_.t());  // logits [B, T, 256]
  }
  double forward_flops_per_sample() const override { return 2.0 * seq_len_ * d_model_ * kBytes; }
  std::string describe() const override {
    return fmt::format("norm + output {}->{}{}", d_model_, kBytes, tied_ ? " (tied)" : "");
  }

 private:
  nn::LayerNorm norm_{nullptr};
  torch::Tensor weight_;
  int d_model_, seq_len_;
  bool tied_;
};

}  // namespace

std::vector<double> Model::unit_flops() const {
  std::vector<double> flops;
  for (const auto& u : units) flops.push_back(u->forward_flops_per_sample());
  return flops;
}

std::int64_t Model::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : unique_parameters(*this, 0, static_cast<int>(units.size()))) n += p.numel();
  return n;
}

std::vector<torch::Tensor> unique_parameters(const Model& model, int first, int last) {
  std::vector<torch::Tensor> out;
  std::set<const void*> seen;
  for (int i = first; i < last; ++i)
    for (const auto& p : model.units[static_cast<std::size_t>(i)]->parameters())
      if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
  return out;
}

Model build_model(const TrainOptions& o) {
  torch::manual_seed(o.seed);
  Model model;
  switch (o.model) {
    case Workload::kMlp: {
      int in = kImageSide * kImageSide;
      for (int width : o.mlp_hidden) {
        model.units.push_back(std::make_shared<DenseUnit>(in, width, true, o.dropout, o.init_scale, model.units.empty()));
        in = width;
      }
      model.units.push_back(
          std::make_shared<DenseUnit>(in, kClasses, false, 0.0, o.init_scale, model.units.empty()));
      model.classes = kClasses;
      break;
    }
    case Workload::kCnn: {
      int channels = o.cnn_channels.front(), side = kImageSide;
      model.units.push_back(std::make_shared<StemUnit>(channels, o.init_scale));
      for (int next : o.cnn_channels) {
        const int stride = next > channels ? 2 : 1;  // widen and halve the resolution together
        model.units.push_back(std::make_shared<ResidualUnit>(channels, next, stride, side, o.init_scale));
        side = (side + stride - 1) / stride;
        channels = next;
      }
      model.units.push_back(std::make_shared<PoolClassifierUnit>(channels, o.dropout, o.init_scale));
      model.classes = kClasses;
      break;
    }
    case Workload::kGpt: {
      auto embedding = std::make_shared<EmbeddingUnit>(o.d_model, o.seq_len, o.dropout, o.init_scale);
      model.units.push_back(embedding);
      for (int l = 0; l < o.layers; ++l)
        model.units.push_back(std::make_shared<DecoderBlockUnit>(o.d_model, o.heads, o.seq_len, o.mlp_ratio, o.dropout,
                                                                 o.init_scale, o.layers));
      if (o.tied_embeddings) model.tied_weight = embedding->token_weight();
      model.units.push_back(std::make_shared<OutputUnit>(o.d_model, o.seq_len, model.tied_weight, o.init_scale));
      model.sequence_targets = true;
      model.classes = kBytes;
      break;
    }
  }
  return model;
}

}  // namespace paratune::train
