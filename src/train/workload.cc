#include "paratune/train/workload.h"

namespace paratune::train {
namespace {

constexpr std::int64_t kImageSide = 28, kClasses = 10, kBytes = 256;

UnitShape dense(std::int64_t in, std::int64_t out) { return {"dense", 2.0 * in * out, in * out + out, out}; }

// 3x3 convolutions without bias, each followed by BatchNorm (weight and bias: 2 per channel).
UnitShape stem(std::int64_t channels) {
  return {"stem", 2.0 * 9 * channels * kImageSide * kImageSide, 9 * channels + 2 * channels,
          channels * kImageSide * kImageSide};
}

// A ResNet basic block (He et al. 2016): two 3x3 convolutions, a 1x1 projection shortcut where the
// shape changes. `side`: the input's height and width.
UnitShape residual(std::int64_t in, std::int64_t out, std::int64_t stride, std::int64_t side) {
  const std::int64_t out_side = (side + stride - 1) / stride;
  const bool shortcut = stride != 1 || in != out;
  const double pixels = static_cast<double>(out_side * out_side);
  UnitShape u{"residual", 0, 0, out * out_side * out_side};
  u.forward_flops_per_sample = 2.0 * pixels * (9.0 * in * out + 9.0 * out * out + (shortcut ? 1.0 * in * out : 0.0));
  u.parameters = 9 * in * out + 2 * out + 9 * out * out + 2 * out + (shortcut ? in * out + 2 * out : 0);
  return u;
}

}  // namespace

std::vector<UnitShape> workload_units(const TrainOptions& options) {
  const TrainOptions o = narrowed(options);  // the trained widths
  std::vector<UnitShape> units;
  switch (o.model) {
    case Workload::kMlp: {
      std::int64_t in = kImageSide * kImageSide;
      for (int width : o.mlp_hidden) {
        units.push_back(dense(in, width));
        in = width;
      }
      units.push_back(dense(in, kClasses));
      break;
    }
    case Workload::kCnn: {
      std::int64_t channels = o.cnn_channels.front(), side = kImageSide;
      units.push_back(stem(channels));
      for (int next : o.cnn_channels) {
        const std::int64_t stride = next > channels ? 2 : 1;  // widen and halve the resolution together
        units.push_back(residual(channels, next, stride, side));
        side = (side + stride - 1) / stride;
        channels = next;
      }
      // Global average pool, then a linear classifier.
      units.push_back({"classifier", 2.0 * channels * kClasses, channels * kClasses + kClasses, kClasses});
      break;
    }
    case Workload::kGpt: {
      const std::int64_t t = o.seq_len, d = o.d_model, r = o.mlp_ratio;
      // Token and position embeddings; the forward's FLOPs are their addition.
      units.push_back({"embedding", 1.0 * t * d, kBytes * d + t * d, t * d});
      for (int l = 0; l < o.layers; ++l) {
        // Projections 2·T·(3d² + d² + 2·r·d²), attention scores and mixing 2·2·T²·d; two LayerNorms.
        const double flops = 2.0 * t * (4.0 * d * d + 2.0 * r * d * d) + 4.0 * t * t * d;
        const std::int64_t parameters = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (r * d * d + r * d) + (r * d * d + d);
        units.push_back({"block", flops, parameters, t * d});
      }
      units.push_back({"output", 2.0 * t * d * kBytes, 2 * d + (o.tied_embeddings ? 0 : kBytes * d), t * kBytes});
      break;
    }
  }
  return units;
}

}  // namespace paratune::train
