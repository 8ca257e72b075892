// Uses the installed library (examples/consumer/README.md): a preset model's parameter count and
// whether one configuration fits.
#include <paratune/cost/estimate.h>
#include <paratune/cost/model_stats.h>
#include <paratune/spec/io.h>
#include <paratune/spec/parallel.h>
#include <paratune/spec/presets.h>

#include <cstdio>

int main() {
  const paratune::ModelSpec model = paratune::find_model_preset("llama3.1-8b").spec;
  const paratune::ClusterSpec cluster = paratune::load_cluster("dgx-h100:1");  // one node of 8;
  paratune::TrainingSpec training;
  training.seq_len = 4096;
  training.global_batch = 64;
  const paratune::Estimate e =
      paratune::estimate(model, cluster, training, paratune::parse_parallel_config("dp=8,mbs=1,zero=1,recompute=full"));
  std::printf("%s: %.3fB parameters, fits %s\n", model.name.c_str(), paratune::count_parameters(model).total / 1e9,
              e.fits ? "yes" : "no");
  return 0;
}
