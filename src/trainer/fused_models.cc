#include "fused_models.h"

#include <fmt/format.h>

#include <limits>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

// Builds one fused unit's weights from the members' unit (same index in every member): a stacked
// copy of each named parameter and buffer, registered in the fused unit `into` under the name with
// '.' as '_', and each parameter's rate scaling (member 0's; every member has the same).
class Stacker {
 public:
  Stacker(const std::vector<Model>& members, std::size_t unit, std::vector<torch::Tensor>& parameters,
          std::vector<RateScaling>& scaling)
      : members_(members), unit_(unit), parameters_(parameters), scaling_(scaling) {}

  torch::Tensor parameter(torch::nn::Module& into, const std::string& name) {
    std::vector<torch::Tensor> slices;
    for (const Model& m : members_) slices.push_back(find(m, name, true).detach());
    torch::Tensor stacked = into.register_parameter(registered(name), torch::stack(slices));
    parameters_.push_back(stacked);
    scaling_.push_back(members_.front().rate_scaling_of(find(members_.front(), name, true)));
    return stacked;
  }

  torch::Tensor buffer(torch::nn::Module& into, const std::string& name) {
    std::vector<torch::Tensor> slices;
    for (const Model& m : members_) slices.push_back(find(m, name, false));
    return into.register_buffer(registered(name), torch::stack(slices));
  }

 private:
  static std::string registered(std::string name) {
    for (char& c : name)
      if (c == '.') c = '_';
    return name;
  }

  // By value: named_parameters() returns its dictionary by value, so a reference into it dangles
  // once the dictionary is gone (AddressSanitizer: heap-use-after-free). A tensor is a handle.
  torch::Tensor find(const Model& m, const std::string& name, bool parameter) const {
    const auto& unit = m.units[unit_];
    const auto named = parameter ? unit->named_parameters() : unit->named_buffers();
    const torch::Tensor* found = named.find(name);
    if (!found) throw std::logic_error("fusion: the unit has no " + name);
    return *found;
  }

  const std::vector<Model>& members_;
  std::size_t unit_;
  std::vector<torch::Tensor>& parameters_;
  std::vector<RateScaling>& scaling_;
};

// x [B, n, in] (or [B, ..., in]) through each member's linear layer: weight [B, out, in], bias [B, out].
torch::Tensor fused_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const std::int64_t members = weight.size(0), in = weight.size(2);
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(1);
  return torch::baddbmm(bias.unsqueeze(1), x.reshape({members, -1, in}), weight.transpose(1, 2)).view(shape);
}

// Each member's LayerNorm over the last dimension: gain and shift [B, d].
torch::Tensor fused_layer_norm(const torch::Tensor& x, const torch::Tensor& gain, const torch::Tensor& shift) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(x.dim()), 1);
  shape.front() = gain.size(0), shape.back() = gain.size(1);
  return torch::layer_norm(x, {x.size(-1)}).mul(gain.view(shape)).add(shift.view(shape));
}

// BatchNorm over B x C channels (x [n, B x C, H, W]): the members' statistics and affine [B, C].
struct FusedBatchNorm {
  torch::Tensor weight, bias, running_mean, running_var;
  FusedBatchNorm(Stacker& s, torch::nn::Module& into, const std::string& prefix)
      : weight(s.parameter(into, prefix + ".weight")), bias(s.parameter(into, prefix + ".bias")),
        running_mean(s.buffer(into, prefix + ".running_mean")), running_var(s.buffer(into, prefix + ".running_var")) {}
  torch::Tensor operator()(const torch::Tensor& x, bool training) const {
    // torch::nn::BatchNorm2d's defaults: momentum 0.1, eps 1e-5; running statistics updated in place.
    return torch::batch_norm(x, weight.view(-1), bias.view(-1), running_mean.view(-1), running_var.view(-1), training,
                             0.1, 1e-5, false);
  }
};

class FusedDense final : public FusedUnit {
 public:
  FusedDense(const UnitSpec& spec, Stacker& s)
      : spec_(spec), weight_(s.parameter(*this, "linear.weight")), bias_(s.parameter(*this, "linear.bias")) {}
  torch::Tensor forward(const torch::Tensor& input) override {
    // The first layer's input is the shared batch [n, ...]: the same for every member.
    torch::Tensor x = spec_.flatten ? input.flatten(1).unsqueeze(0).expand({weight_.size(0), -1, -1}) : input;
    if (spec_.input_multiplier != 1) x = x * spec_.input_multiplier;
    x = fused_linear(x, weight_, bias_);
    if (spec_.relu) x = torch::relu(x);
    if (spec_.relu && spec_.dropout > 0) x = torch::dropout(x, spec_.dropout, is_training());
    return x;
  }

 private:
  UnitSpec spec_;
  torch::Tensor weight_, bias_;
};

class FusedStem final : public FusedUnit {
 public:
  FusedStem(const UnitSpec& spec, Stacker& s) : conv_(s.parameter(*this, "conv.weight")), norm_(s, *this, "norm") { (void)spec; }
  torch::Tensor forward(const torch::Tensor& input) override {  // [n, 1, 28, 28], shared
    const torch::Tensor w = conv_.view({-1, conv_.size(2), conv_.size(3), conv_.size(4)});  // [B x C, 1, 3, 3]
    return torch::relu(norm_(torch::conv2d(input, w, {}, 1, 1), is_training()));
  }

 private:
  torch::Tensor conv_;  // [B, C, 1, 3, 3]
  FusedBatchNorm norm_;
};

class FusedResidual final : public FusedUnit {
 public:
  FusedResidual(const UnitSpec& spec, Stacker& s, int members)
      : spec_(spec), members_(members), conv1_(s.parameter(*this, "conv1.weight")), norm1_(s, *this, "norm1"),
        conv2_(s.parameter(*this, "conv2.weight")), norm2_(s, *this, "norm2") {
    if (spec.stride != 1 || spec.in != spec.out) {
      shortcut_ = s.parameter(*this, "shortcut.weight");
      shortcut_norm_ = std::make_unique<FusedBatchNorm>(s, *this, "shortcut_norm");
    }
  }
  torch::Tensor forward(const torch::Tensor& input) override {  // [n, B x in, H, W]
    torch::Tensor x = torch::relu(norm1_(conv(input, conv1_, spec_.stride, 1), is_training()));
    x = norm2_(conv(x, conv2_, 1, 1), is_training());
    const torch::Tensor skip = shortcut_.defined()
                                   ? (*shortcut_norm_)(conv(input, shortcut_, spec_.stride, 0), is_training())
                                   : input;
    return torch::relu(x + skip);
  }

 private:
  // Each member's convolution [B, out, in, k, k] over its own channels: one grouped convolution.
  torch::Tensor conv(const torch::Tensor& x, const torch::Tensor& w, int stride, int padding) const {
    return torch::conv2d(x, w.view({-1, w.size(2), w.size(3), w.size(4)}), {}, stride, padding, 1, members_);
  }

  UnitSpec spec_;
  int members_;
  torch::Tensor conv1_;
  FusedBatchNorm norm1_;
  torch::Tensor conv2_;
  FusedBatchNorm norm2_;
  torch::Tensor shortcut_;
  std::unique_ptr<FusedBatchNorm> shortcut_norm_;
};

class FusedPoolClassifier final : public FusedUnit {
 public:
  FusedPoolClassifier(const UnitSpec& spec, Stacker& s)
      : spec_(spec), weight_(s.parameter(*this, "linear.weight")), bias_(s.parameter(*this, "linear.bias")) {}
  torch::Tensor forward(const torch::Tensor& input) override {  // [n, B x C, H, W]
    const std::int64_t members = weight_.size(0);
    torch::Tensor x = input.mean({2, 3}).view({input.size(0), members, -1}).transpose(0, 1);  // [B, n, C]
    if (spec_.dropout > 0) x = torch::dropout(x, spec_.dropout, is_training());
    if (spec_.input_multiplier != 1) x = x * spec_.input_multiplier;
    return fused_linear(x, weight_, bias_);
  }

 private:
  UnitSpec spec_;
  torch::Tensor weight_, bias_;
};

class FusedEmbedding final : public FusedUnit {
 public:
  FusedEmbedding(const UnitSpec& spec, Stacker& s)
      : spec_(spec), tokens_(s.parameter(*this, "tokens.weight")), positions_(s.parameter(*this, "positions")) {}
  torch::Tensor forward(const torch::Tensor& input) override {  // [n, T] bytes, shared
    const std::int64_t t = input.size(1);
    // One lookup per member (torch::embedding, as nn::Embedding does): its backward sums the rows'
    // gradients as the member's own run would.
    std::vector<torch::Tensor> looked_up;
    for (std::int64_t b = 0; b < tokens_.size(0); ++b) looked_up.push_back(torch::embedding(tokens_[b], input));
    torch::Tensor x = torch::stack(looked_up) + positions_.slice(1, 0, t).unsqueeze(1);  // [B, n, T, d]
    if (spec_.dropout > 0) x = torch::dropout(x, spec_.dropout, is_training());
    return x;
  }
  const torch::Tensor& tokens() const { return tokens_; }

 private:
  UnitSpec spec_;
  torch::Tensor tokens_, positions_;  // [B, 256, d], [B, T, d]
};

class FusedDecoderBlock final : public FusedUnit {
 public:
  FusedDecoderBlock(const UnitSpec& spec, Stacker& s)
      : spec_(spec), norm1_w_(s.parameter(*this, "norm1.weight")), norm1_b_(s.parameter(*this, "norm1.bias")),
        qkv_w_(s.parameter(*this, "qkv.weight")), qkv_b_(s.parameter(*this, "qkv.bias")), out_w_(s.parameter(*this, "out.weight")),
        out_b_(s.parameter(*this, "out.bias")), norm2_w_(s.parameter(*this, "norm2.weight")), norm2_b_(s.parameter(*this, "norm2.bias")),
        up_w_(s.parameter(*this, "up.weight")), up_b_(s.parameter(*this, "up.bias")), down_w_(s.parameter(*this, "down.weight")),
        down_b_(s.parameter(*this, "down.bias")) {}
  torch::Tensor forward(const torch::Tensor& input) override {  // [B, n, T, d]
    const std::int64_t members = input.size(0), n = input.size(1), t = input.size(2), d = input.size(3);
    const std::int64_t heads = spec_.heads, hd = d / heads;
    // The members' sequences are a batch of B x n sequences for the attention itself.
    auto qkv = fused_linear(fused_layer_norm(input, norm1_w_, norm1_b_), qkv_w_, qkv_b_)
                   .view({members * n, t, 3, heads, hd})
                   .permute({2, 0, 3, 1, 4});  // [3, B x n, H, T, hd]
    const torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * spec_.attention_scale;
    const torch::Tensor future = torch::ones({t, t}, torch::kBool).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    torch::Tensor attention = torch::softmax(scores, -1);
    if (spec_.dropout > 0) attention = torch::dropout(attention, spec_.dropout, is_training());
    torch::Tensor mixed = torch::matmul(attention, v).permute({0, 2, 1, 3}).reshape({members, n, t, d});
    mixed = fused_linear(mixed, out_w_, out_b_);
    if (spec_.dropout > 0) mixed = torch::dropout(mixed, spec_.dropout, is_training());
    torch::Tensor x = input + mixed;
    torch::Tensor h =
        fused_linear(torch::gelu(fused_linear(fused_layer_norm(x, norm2_w_, norm2_b_), up_w_, up_b_)), down_w_, down_b_);
    if (spec_.dropout > 0) h = torch::dropout(h, spec_.dropout, is_training());
    return x + h;
  }

 private:
  UnitSpec spec_;
  torch::Tensor norm1_w_, norm1_b_, qkv_w_, qkv_b_, out_w_, out_b_, norm2_w_, norm2_b_, up_w_, up_b_, down_w_, down_b_;
};

class FusedOutput final : public FusedUnit {
 public:
  // `tied`: the fused embedding's token table, else a weight of its own.
  FusedOutput(const UnitSpec& spec, Stacker& s, const torch::Tensor& tied)
      : spec_(spec), norm_w_(s.parameter(*this, "norm.weight")), norm_b_(s.parameter(*this, "norm.bias")),
        weight_(tied.defined() ? register_parameter("weight", tied) : s.parameter(*this, "weight")) {}
  torch::Tensor forward(const torch::Tensor& input) override {  // [B, n, T, d] -> [B, n, T, 256]
    torch::Tensor x = fused_layer_norm(input, norm_w_, norm_b_);
    if (spec_.input_multiplier != 1) x = x * spec_.input_multiplier;
    const std::int64_t members = input.size(0), n = input.size(1), t = input.size(2);
    return torch::bmm(x.reshape({members, n * t, -1}), weight_.transpose(1, 2)).view({members, n, t, -1});
  }

 private:
  UnitSpec spec_;
  torch::Tensor norm_w_, norm_b_, weight_;
};

bool same_architecture(const UnitSpec& a, const UnitSpec& b) {
  return a.kind == b.kind && a.in == b.in && a.out == b.out && a.stride == b.stride && a.relu == b.relu &&
         a.flatten == b.flatten && a.tied == b.tied && a.dropout == b.dropout &&
         a.input_multiplier == b.input_multiplier && a.attention_scale == b.attention_scale && a.heads == b.heads &&
         a.mlp_ratio == b.mlp_ratio;
}

}  // namespace

torch::Tensor FusedModel::forward(torch::Tensor x) {
  for (auto& unit : units) x = unit->forward(x);
  return x;
}

void FusedModel::train(bool on) {
  for (auto& unit : units) unit->train(on);
}

FusedModel fuse_models(const std::vector<Model>& members) {
  if (members.empty()) throw Error("fusion: no members");
  const Model& first = members.front();
  for (std::size_t m = 1; m < members.size(); ++m) {
    bool same = members[m].units.size() == first.units.size() && members[m].classes == first.classes;
    for (std::size_t i = 0; same && i < first.units.size(); ++i)
      same = same_architecture(members[m].units[i]->spec(), first.units[i]->spec());
    if (!same) throw Error(fmt::format("fusion: member {}'s model differs from member 0's (fused trials share the "
                                       "architecture)", m));
  }
  FusedModel fused;
  fused.members = static_cast<int>(members.size());
  fused.sequence_targets = first.sequence_targets;
  fused.classes = first.classes;
  torch::Tensor tied;  // the fused token table, when the output projection is tied to it
  for (std::size_t i = 0; i < first.units.size(); ++i) {
    const UnitSpec spec = first.units[i]->spec();
    Stacker s(members, i, fused.parameters, fused.rate_scaling);
    std::shared_ptr<FusedUnit> unit;
    switch (spec.kind) {
      case UnitSpec::Kind::kDense: unit = std::make_shared<FusedDense>(spec, s); break;
      case UnitSpec::Kind::kStem: unit = std::make_shared<FusedStem>(spec, s); break;
      case UnitSpec::Kind::kResidual: unit = std::make_shared<FusedResidual>(spec, s, fused.members); break;
      case UnitSpec::Kind::kPoolClassifier: unit = std::make_shared<FusedPoolClassifier>(spec, s); break;
      case UnitSpec::Kind::kEmbedding: {
        auto embedding = std::make_shared<FusedEmbedding>(spec, s);
        if (first.tied_weight.defined()) tied = embedding->tokens();
        unit = embedding;
        break;
      }
      case UnitSpec::Kind::kDecoderBlock: unit = std::make_shared<FusedDecoderBlock>(spec, s); break;
      case UnitSpec::Kind::kOutput: unit = std::make_shared<FusedOutput>(spec, s, spec.tied ? tied : torch::Tensor()); break;
    }
    fused.units.push_back(unit);
  }
  return fused;
}

torch::Tensor member_losses(const torch::Tensor& logits, const torch::Tensor& targets, int classes) {
  const std::int64_t members = logits.size(0);
  const torch::Tensor all_targets = targets.reshape({1, -1}).expand({members, -1}).reshape(-1);
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits.reshape({-1, classes}), all_targets, F::CrossEntropyFuncOptions().reduction(torch::kNone))
      .view({members, -1})
      .mean(1);
}

}  // namespace paratune::train
