#include "models.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "paratune/train/mup.h"

namespace paratune::train {
namespace {

namespace nn = torch::nn;

constexpr int kImageSide = 28, kClasses = 10, kBytes = 256;

// How the units initialize their weights, scale their rates and multiply their readout: the
// standard parametrization (SP) at the trained width, or muP against the base model, the options'
// own widths (train/mup.h). A width that grows is surrogate_ratio = S times its trained size at
// the base: m = 1/S. A weight's role follows from which of its dimensions grow.
class WidthRules {
 public:
  WidthRules(const TrainOptions& o, Model& model)
      : mup_(o.parametrization == Parametrization::kMup), optimizer_(o.optimizer), ratio_(o.surrogate_ratio),
        base_head_dim_(o.heads > 0 ? o.d_model / o.heads : 0), model_(model) {}

  // A dimension at the base width: S times the trained one when it grows with width.
  [[nodiscard]] double base(double size, bool grows) const { return grows ? size * ratio_ : size; }

  // Draws `weight` from normal(0, std) and records its rate scaling. `sp_std`: the model's
  // initialization at the trained width (SP); `base_std`: the same formula at the base width,
  // which muP's init factor multiplies.
  void init(torch::Tensor& weight, bool fan_in_grows, bool fan_out_grows, double sp_std, double base_std) {
    const MupScaling s = scaling(fan_in_grows, fan_out_grows);
    torch::NoGradGuard no_grad;
    weight.normal_(0, mup_ ? base_std * s.init_std : sp_std);
    model_.rate_scaling[weight.unsafeGetTensorImpl()] = {s.learning_rate, s.weight_decay};
  }

  // A bias or a norm's gain or shift (initialized by its module): records its rate scaling.
  void vector(const torch::Tensor& parameter, bool grows) {
    const MupScaling s = scaling(false, grows);
    model_.rate_scaling[parameter.unsafeGetTensorImpl()] = {s.learning_rate, s.weight_decay};
  }

  // The output layer's input multiplier (MuReadout's 1/m_in).
  [[nodiscard]] double readout_multiplier() const { return mup_ ? ratio_ : 1; }

  // Attention scores' scale: 1/sqrt(d_head) under SP, sqrt(d_head_base)/d_head under muP (the two
  // agree where the surrogate keeps the base's head dimension: narrowed() divides the heads).
  [[nodiscard]] double attention_scale(int head_dim) const {
    return mup_ ? mup_attention_scale(head_dim, base_head_dim_) : 1 / std::sqrt(static_cast<double>(head_dim));
  }

 private:
  // input: fan-out grows; hidden: both; output: fan-in; a weight of neither (a linear model's one
  // layer, the classifier's bias) is scaled by nothing.
  [[nodiscard]] MupScaling scaling(bool fan_in_grows, bool fan_out_grows) const {
    if (!mup_) return {};
    const double m = 1 / ratio_, m_in = fan_in_grows ? m : 1, m_out = fan_out_grows ? m : 1;
    if (fan_in_grows && fan_out_grows) return mup_scaling(WeightRole::kHidden, optimizer_, m_in, m_out);
    if (fan_in_grows) return mup_scaling(WeightRole::kOutput, optimizer_, m_in, m_out);
    if (fan_out_grows) return mup_scaling(WeightRole::kInput, optimizer_, m_in, m_out);
    return mup_scaling(WeightRole::kVector, optimizer_, 1, 1);
  }

  bool mup_;
  Optimizer optimizer_;
  double ratio_;
  int base_head_dim_;  // the GPT's d_model / heads at the base width
  Model& model_;
};

// ---- MLP: [Linear + ReLU + dropout] per hidden width, then a Linear classifier. ----

class DenseUnit final : public Unit {
 public:
  // The first layer's input (pixels) and the last's output (classes) keep their size at any width.
  DenseUnit(int in, int out, bool first, bool last, double dropout, double init_scale, WidthRules& rules)
      : relu_(!last), flatten_(first), dropout_p_(dropout), in_(in), out_(out),
        input_multiplier_(last ? rules.readout_multiplier() : 1) {
    linear_ = register_module("linear", nn::Linear(in, out));
    const double gain = relu_ ? 2.0 : 1.0;
    rules.init(linear_->weight, !first, !last, init_scale * std::sqrt(gain / in),
               init_scale * std::sqrt(gain / rules.base(in, !first)));
    nn::init::zeros_(linear_->bias);
    rules.vector(linear_->bias, !last);
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = flatten_ ? input.flatten(1) : input;
    if (input_multiplier_ != 1) x = x * input_multiplier_;
    x = linear_->forward(x);
    if (relu_) x = torch::relu(x);
    if (relu_ && dropout_p_ > 0) x = torch::dropout(x, dropout_p_, is_training());
    return x;
  }
  double forward_flops_per_sample() const override { return 2.0 * in_ * out_; }
  UnitSpec spec() const override {
    UnitSpec s{UnitSpec::Kind::kDense, in_, out_};
    s.relu = relu_, s.flatten = flatten_, s.dropout = dropout_p_, s.input_multiplier = input_multiplier_;
    return s;
  }
  std::string describe() const override { return fmt::format("linear {}->{}{}", in_, out_, relu_ ? " relu" : ""); }

 private:
  nn::Linear linear_{nullptr};
  bool relu_, flatten_;
  double dropout_p_;
  int in_, out_;
  double input_multiplier_;
};

// ---- CNN: a stem, one ResNet basic block per channel count (He et al. 2016), pool + classifier. ----

// `in_grows`: false for the stem's one input channel.
nn::Conv2d conv3x3(int in, int out, int stride, double init_scale, WidthRules& rules, bool in_grows = true) {
  auto conv = nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
  rules.init(conv->weight, in_grows, true, init_scale * std::sqrt(2.0 / (9.0 * in)),
             init_scale * std::sqrt(2.0 / (9.0 * rules.base(in, in_grows))));
  return conv;
}

nn::BatchNorm2d batch_norm(int channels, WidthRules& rules) {
  auto norm = nn::BatchNorm2d(channels);
  rules.vector(norm->weight, true);
  rules.vector(norm->bias, true);
  return norm;
}

class StemUnit final : public Unit {
 public:
  StemUnit(int channels, double init_scale, WidthRules& rules) : channels_(channels) {
    conv_ = register_module("conv", conv3x3(1, channels, 1, init_scale, rules, false));
    norm_ = register_module("norm", batch_norm(channels, rules));
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    return torch::relu(norm_->forward(conv_->forward(input)));
  }
  double forward_flops_per_sample() const override { return 2.0 * 9 * channels_ * kImageSide * kImageSide; }
  UnitSpec spec() const override { return {UnitSpec::Kind::kStem, 1, channels_}; }
  std::string describe() const override { return fmt::format("stem conv3x3 1->{} bn relu", channels_); }

 private:
  nn::Conv2d conv_{nullptr};
  nn::BatchNorm2d norm_{nullptr};
  int channels_;
};

class ResidualUnit final : public Unit {
 public:
  // `side`: the input's height and width.
  ResidualUnit(int in, int out, int stride, int side, double init_scale, WidthRules& rules)
      : in_(in), out_(out), stride_(stride), out_side_((side + stride - 1) / stride) {
    conv1_ = register_module("conv1", conv3x3(in, out, stride, init_scale, rules));
    norm1_ = register_module("norm1", batch_norm(out, rules));
    conv2_ = register_module("conv2", conv3x3(out, out, 1, init_scale, rules));
    norm2_ = register_module("norm2", batch_norm(out, rules));
    if (stride != 1 || in != out) {
      shortcut_ = register_module("shortcut", nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
      rules.init(shortcut_->weight, true, true, init_scale * std::sqrt(1.0 / in),
                 init_scale * std::sqrt(1.0 / rules.base(in, true)));
      shortcut_norm_ = register_module("shortcut_norm", batch_norm(out, rules));
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
  UnitSpec spec() const override {
    UnitSpec s{UnitSpec::Kind::kResidual, in_, out_};
    s.stride = stride_;
    return s;
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, shortcut_{nullptr};
  nn::BatchNorm2d norm1_{nullptr}, norm2_{nullptr}, shortcut_norm_{nullptr};
  int in_, out_, stride_, out_side_;
};

class PoolClassifierUnit final : public Unit {
 public:
  PoolClassifierUnit(int channels, double dropout, double init_scale, WidthRules& rules)
      : channels_(channels), dropout_p_(dropout), input_multiplier_(rules.readout_multiplier()) {
    linear_ = register_module("linear", nn::Linear(channels, kClasses));
    rules.init(linear_->weight, true, false, init_scale * std::sqrt(1.0 / channels),
               init_scale * std::sqrt(1.0 / rules.base(channels, true)));
    nn::init::zeros_(linear_->bias);
    rules.vector(linear_->bias, false);
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = input.mean({2, 3});  // global average pool
    if (dropout_p_ > 0) x = torch::dropout(x, dropout_p_, is_training());
    if (input_multiplier_ != 1) x = x * input_multiplier_;
    return linear_->forward(x);
  }
  double forward_flops_per_sample() const override { return 2.0 * channels_ * kClasses; }
  std::string describe() const override { return fmt::format("pool + linear {}->{}", channels_, kClasses); }
  UnitSpec spec() const override {
    UnitSpec s{UnitSpec::Kind::kPoolClassifier, channels_, kClasses};
    s.dropout = dropout_p_, s.input_multiplier = input_multiplier_;
    return s;
  }

 private:
  nn::Linear linear_{nullptr};
  int channels_;
  double dropout_p_, input_multiplier_;
};

nn::LayerNorm layer_norm(int d_model, WidthRules& rules) {
  auto norm = nn::LayerNorm(nn::LayerNormOptions({d_model}));
  rules.vector(norm->weight, true);
  rules.vector(norm->bias, true);
  return norm;
}

// ---- GPT: token + position embedding, pre-norm decoder blocks, final norm + output projection. ----

class EmbeddingUnit final : public Unit {
 public:
  // Both tables are input weights (a byte or a position in, d_model out): 0.02 at any width.
  EmbeddingUnit(int d_model, int seq_len, double dropout, double init_scale, WidthRules& rules)
      : d_model_(d_model), seq_len_(seq_len), dropout_p_(dropout) {
    tokens_ = register_module("tokens", nn::Embedding(kBytes, d_model));
    positions_ = register_parameter("positions", torch::empty({seq_len, d_model}));
    rules.init(tokens_->weight, false, true, 0.02 * init_scale, 0.02 * init_scale);
    rules.init(positions_, false, true, 0.02 * init_scale, 0.02 * init_scale);
  }
  torch::Tensor forward(const torch::Tensor& input) override {  // input: [B, T] byte values
    const std::int64_t t = input.size(1);
    torch::Tensor x = tokens_->forward(input) + positions_.slice(0, 0, t);
    if (dropout_p_ > 0) x = torch::dropout(x, dropout_p_, is_training());
    return x;
  }
  double forward_flops_per_sample() const override { return 1.0 * seq_len_ * d_model_; }  // the addition
  std::string describe() const override { return fmt::format("embedding {}x{} + positions", kBytes, d_model_); }
  UnitSpec spec() const override {
    UnitSpec s{UnitSpec::Kind::kEmbedding, kBytes, d_model_};
    s.dropout = dropout_p_;
    return s;
  }
  torch::Tensor& token_weight() { return tokens_->weight; }

 private:
  nn::Embedding tokens_{nullptr};
  torch::Tensor positions_;
  int d_model_, seq_len_;
  double dropout_p_;
};

class DecoderBlockUnit final : public Unit {
 public:
  // Every projection is a hidden weight: GPT-2's constant std is SP's at any width, muP's at the base.
  DecoderBlockUnit(int d_model, int heads, int seq_len, int mlp_ratio, double dropout, double init_scale, int layers,
                   WidthRules& rules)
      : d_model_(d_model), heads_(heads), seq_len_(seq_len), mlp_ratio_(mlp_ratio), dropout_p_(dropout),
        attention_scale_(rules.attention_scale(d_model / heads)) {
    norm1_ = register_module("norm1", layer_norm(d_model, rules));
    qkv_ = register_module("qkv", nn::Linear(d_model, 3 * d_model));
    out_ = register_module("out", nn::Linear(d_model, d_model));
    norm2_ = register_module("norm2", layer_norm(d_model, rules));
    up_ = register_module("up", nn::Linear(d_model, mlp_ratio * d_model));
    down_ = register_module("down", nn::Linear(mlp_ratio * d_model, d_model));
    const double std = 0.02 * init_scale, residual_std = std / std::sqrt(2.0 * layers);
    for (auto* linear : {&qkv_, &up_}) rules.init((*linear)->weight, true, true, std, std);
    for (auto* linear : {&out_, &down_}) rules.init((*linear)->weight, true, true, residual_std, residual_std);
    for (auto* linear : {&qkv_, &out_, &up_, &down_}) {
      nn::init::zeros_((*linear)->bias);
      rules.vector((*linear)->bias, true);
    }
  }
  torch::Tensor forward(const torch::Tensor& input) override {  // [B, T, d]
    const std::int64_t b = input.size(0), t = input.size(1), hd = d_model_ / heads_;
    // Causal self-attention (Vaswani et al. 2017), heads split from the fused projection.
    auto qkv = qkv_->forward(norm1_->forward(input)).view({b, t, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    const torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, T, hd]
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * attention_scale_;
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
  UnitSpec spec() const override {
    UnitSpec s{UnitSpec::Kind::kDecoderBlock, d_model_, d_model_};
    s.dropout = dropout_p_, s.attention_scale = attention_scale_, s.heads = heads_, s.mlp_ratio = mlp_ratio_;
    return s;
  }

 private:
  nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  nn::Linear qkv_{nullptr}, out_{nullptr}, up_{nullptr}, down_{nullptr};
  int d_model_, heads_, seq_len_, mlp_ratio_;
  double dropout_p_, attention_scale_;
};

class OutputUnit final : public Unit {
 public:
  // `tied`: the token embedding's weight [V, d], else a weight of its own.
  // A tied weight keeps the embedding's rules (mup's MuSharedReadout); both divide the input by m.
  OutputUnit(int d_model, int seq_len, const torch::Tensor& tied, double init_scale, WidthRules& rules)
      : d_model_(d_model), seq_len_(seq_len), tied_(tied.defined()), input_multiplier_(rules.readout_multiplier()) {
    norm_ = register_module("norm", layer_norm(d_model, rules));
    if (tied_) {
      weight_ = register_parameter("weight", tied);
    } else {
      weight_ = register_parameter("weight", torch::empty({kBytes, d_model}));
      rules.init(weight_, true, false, 0.02 * init_scale, 0.02 * init_scale);
    }
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = norm_->forward(input);
    if (input_multiplier_ != 1) x = x * input_multiplier_;
    return torch::matmul(x, weight_.t());  // logits [B, T, 256]
  }
  double forward_flops_per_sample() const override { return 2.0 * seq_len_ * d_model_ * kBytes; }
  std::string describe() const override {
    return fmt::format("norm + output {}->{}{}", d_model_, kBytes, tied_ ? " (tied)" : "");
  }
  UnitSpec spec() const override {
    UnitSpec s{UnitSpec::Kind::kOutput, d_model_, kBytes};
    s.tied = tied_, s.input_multiplier = input_multiplier_;
    return s;
  }

 private:
  nn::LayerNorm norm_{nullptr};
  torch::Tensor weight_;
  int d_model_, seq_len_;
  bool tied_;
  double input_multiplier_;
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

RateScaling Model::rate_scaling_of(const torch::Tensor& parameter) const {
  const auto found = rate_scaling.find(parameter.unsafeGetTensorImpl());
  if (found == rate_scaling.end()) throw std::logic_error("a model parameter without its rate scaling");
  return found->second;
}

Model build_model(const TrainOptions& options) {
  torch::manual_seed(options.seed);
  Model model;
  WidthRules rules(options, model);
  const TrainOptions o = narrowed(options);  // the trained widths
  switch (o.model) {
    case Workload::kMlp: {
      int in = kImageSide * kImageSide;
      for (int width : o.mlp_hidden) {
        model.units.push_back(
            std::make_shared<DenseUnit>(in, width, model.units.empty(), false, o.dropout, o.init_scale, rules));
        in = width;
      }
      model.units.push_back(
          std::make_shared<DenseUnit>(in, kClasses, model.units.empty(), true, 0.0, o.init_scale, rules));
      model.classes = kClasses;
      break;
    }
    case Workload::kCnn: {
      int channels = o.cnn_channels.front(), side = kImageSide;
      model.units.push_back(std::make_shared<StemUnit>(channels, o.init_scale, rules));
      for (int next : o.cnn_channels) {
        const int stride = next > channels ? 2 : 1;  // widen and halve the resolution together
        model.units.push_back(std::make_shared<ResidualUnit>(channels, next, stride, side, o.init_scale, rules));
        side = (side + stride - 1) / stride;
        channels = next;
      }
      model.units.push_back(std::make_shared<PoolClassifierUnit>(channels, o.dropout, o.init_scale, rules));
      model.classes = kClasses;
      break;
    }
    case Workload::kGpt: {
      auto embedding = std::make_shared<EmbeddingUnit>(o.d_model, o.seq_len, o.dropout, o.init_scale, rules);
      model.units.push_back(embedding);
      for (int l = 0; l < o.layers; ++l)
        model.units.push_back(std::make_shared<DecoderBlockUnit>(o.d_model, o.heads, o.seq_len, o.mlp_ratio, o.dropout,
                                                                 o.init_scale, o.layers, rules));
      if (o.tied_embeddings) model.tied_weight = embedding->token_weight();
      model.units.push_back(std::make_shared<OutputUnit>(o.d_model, o.seq_len, model.tied_weight, o.init_scale, rules));
      model.sequence_targets = true;
      model.classes = kBytes;
      break;
    }
  }
  return model;
}

}  // namespace paratune::train
