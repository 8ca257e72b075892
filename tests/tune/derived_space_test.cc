// Spaces derived from the planner's axes: exactly the configurations the cost model says fit,
// fastest predicted first, and every point's {config} a valid paratune configuration.
#include "paratune/tune/derived_space.h"

#include <gtest/gtest.h>

#include "../test_util.h"
#include "paratune/plan/ranking.h"
#include "paratune/spec/error.h"
#include "paratune/tune/space.h"

namespace paratune::tune {
namespace {

TEST(DerivedSpace, ListsTheFittingConfigurationsFastestFirst) {
  const ModelSpec model = testing::ModelBuilder().layers(8).hidden(1024).heads(16).build();
  ClusterSpec cluster = testing::dgx_h100(1);
  TrainingSpec training = testing::training(2048, 32);
  plan::SearchSpace axes;
  plan::add_constraints(axes, "mbs=1,2,4", plan::ConstraintKind::kAllow, "--allow");
  const DerivedSpace d = derive_space(model, cluster, training, axes, default_calibration());
  const std::vector<hpo::Config> points = d.space.enumerate();
  ASSERT_EQ(points.size(), d.predicted_iteration_s.size());
  EXPECT_GT(points.size(), 10u);
  // Fastest first; predictions equal within 1e-9 (rounding noise) simpler first (plan/ranking.h).
  for (std::size_t i = 0; i + 1 < d.predicted_iteration_s.size(); ++i)
    EXPECT_LE(d.predicted_iteration_s[i], d.predicted_iteration_s[i + 1] * (1 + plan::kTieRelativeTolerance)) << i;

  // Brute force: every candidate the planner enumerates, estimated; the fitting ones are the points.
  // The derived parameters have no activation offload: it is searched off.
  plan::SearchSpace without_offload = axes;
  plan::add_constraints(without_offload, "offload=false", plan::ConstraintKind::kFix, "--fix");
  std::size_t fitting = 0, candidates = 0;
  for (const plan::MeshShape& mesh : plan::mesh_shapes(model, cluster, training, without_offload))
    plan::enumerate_mesh(model, training, without_offload, mesh, [](const plan::Candidate&) {}, [&](const plan::Candidate& c) {
      ++candidates;
      fitting += estimate(model, cluster, training, plan::to_config(c)).fits ? 1 : 0;
    });
  EXPECT_EQ(d.candidates, candidates);
  EXPECT_EQ(points.size(), fitting);

  // Each point, written as key=value, is the configuration whose prediction is listed beside it.
  for (std::size_t i = 0; i < points.size(); i += 7) {
    const nlohmann::ordered_json& values = points[i];
    std::string text;
    for (const auto& [key, value] : values.items())
      text += (text.empty() ? "" : ",") + key + "=" + word(value);
    const Estimate e = estimate(model, cluster, training, parse_parallel_config(text));
    EXPECT_TRUE(e.fits) << text;
    EXPECT_DOUBLE_EQ(e.iteration_time_s, d.predicted_iteration_s[i]) << text;
  }
}

TEST(DerivedSpace, NothingFitsIsAClearError) {
  const ModelSpec model = testing::ModelBuilder().layers(64).hidden(16384).heads(128).build();
  ClusterSpec cluster = testing::dgx_h100(1);
  cluster.gpus_per_node = 1;
  try {
    derive_space(model, cluster, testing::training(4096, 8), plan::SearchSpace{}, default_calibration());
    FAIL() << "a 200B-parameter model fitted on one GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fits in memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paratune::tune
