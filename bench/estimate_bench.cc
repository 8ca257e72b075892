// Speed of one cost-model estimate, pipeline replay included (README "Cost model", Speed).
#include <benchmark/benchmark.h>

#include "paratune/cost/estimate.h"
#include "paratune/spec/io.h"
#include "paratune/spec/presets.h"

namespace {

using namespace paratune;

void run(benchmark::State& state, const char* model_name, const char* cluster_name, int seq, int batch,
         const char* config_text) {
  const ModelSpec model = find_model_preset(model_name).spec;
  const ClusterSpec cluster = load_cluster(cluster_name);
  TrainingSpec training;
  training.seq_len = seq;
  training.global_batch = batch;
  const ParallelConfig config = parse_parallel_config(config_text);
  for (auto _ : state) benchmark::DoNotOptimize(estimate(model, cluster, training, config));
}

void BM_EstimateLlama70B(benchmark::State& s) {
  run(s, "llama3.1-70b", "dgx-h100:8", 8192, 128, "dp=4,tp=4,pp=4,vpp=5,mbs=1,zero=1,sp=true,recompute=selective");
}
void BM_EstimateLlama8BNoPP(benchmark::State& s) {
  run(s, "llama3-8b", "dgx-h100:8", 8192, 256, "dp=32,tp=2,mbs=1,zero=1,sp=true");
}
void BM_EstimateLlama405B(benchmark::State& s) {
  run(s, "llama3.1-405b", "dgx-h100:2048", 8192, 2048, "dp=128,tp=8,pp=16,vpp=1,mbs=1,zero=1,sp=true,recompute=full");
}
void BM_EstimateMixtral8x22B(benchmark::State& s) {
  run(s, "mixtral-8x22b", "dgx-h100:16", 4096, 512, "dp=16,tp=2,pp=4,ep=8,mbs=1,zero=1,sp=true,recompute=selective");
}

BENCHMARK(BM_EstimateLlama70B);
BENCHMARK(BM_EstimateLlama8BNoPP);
BENCHMARK(BM_EstimateLlama405B);
BENCHMARK(BM_EstimateMixtral8x22B);

}  // namespace

BENCHMARK_MAIN();
