// Speed of the pipeline replay. Targets (issue 3): >= 1 million simulated events per second on one
// core; one iteration of a 1T-parameter configuration (p = 64, >= 512 micro-batches) in <= 50 ms.
//
// The 1T configuration is Megatron-LM's (Narayanan et al. 2021, Table 1): 128 layers, hidden 25600,
// 160 heads, seq 2048, on 3072 A100 with tp = 8, pp = 64, dp = 6, global batch 3072, mbs = 1, so
// m = 512 micro-batches per pipeline.
#include <benchmark/benchmark.h>

#include "paratune/cost/estimate.h"
#include "paratune/sim/pipeline.h"
#include "paratune/spec/io.h"

namespace {

using namespace paratune;

ModelSpec megatron_1t() {
  ModelSpec m;
  m.name = "megatron-1t";
  m.num_layers = 128;
  m.hidden_size = 25600;
  m.num_attention_heads = 160;
  m.ffn_hidden_size = 4 * 25600;
  m.vocab_size = 51200;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = 2048;
  m.bias = true;
  return m;
}

sim::PipelineProblem problem_1t(const char* extra) {
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch = 3072;
  return pipeline_problem(megatron_1t(), load_cluster("dgx-a100:384"), t,
                          parse_parallel_config(std::string("dp=6,tp=8,pp=64,mbs=1,sp=true,zero=1,recompute=full") + extra));
}

void replay(benchmark::State& state, const sim::PipelineProblem& problem, bool record) {
  std::int64_t events = 0;
  for (auto _ : state) {
    const sim::SimulationResult r = sim::simulate(problem, sim::SimulationOptions{.record = record});
    events += r.event_count;
    benchmark::DoNotOptimize(r.iteration_time_s);
  }
  state.counters["events"] = benchmark::Counter(static_cast<double>(events) / state.iterations());
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

void BM_Replay1T_1F1B_Recorded(benchmark::State& s) { replay(s, problem_1t(""), true); }
void BM_Replay1T_1F1B_TotalsOnly(benchmark::State& s) { replay(s, problem_1t(""), false); }
void BM_Replay1T_Interleaved_Recorded(benchmark::State& s) { replay(s, problem_1t(",vpp=2"), true); }
void BM_Replay1T_ZBH1_Recorded(benchmark::State& s) { replay(s, problem_1t(",schedule=zb-h1"), true); }
void BM_Replay1T_InBackward_Recorded(benchmark::State& s) { replay(s, problem_1t(",grad_sync=in-backward"), true); }
void BM_Replay1T_InterleavedZB_Recorded(benchmark::State& s) {
  replay(s, problem_1t(",vpp=2,schedule=interleaved-zb"), true);
}
void BM_Replay1T_ZBV_Recorded(benchmark::State& s) { replay(s, problem_1t(",vpp=2,schedule=zb-v"), true); }
void BM_Replay1T_DualPipeV_Recorded(benchmark::State& s) { replay(s, problem_1t(",vpp=2,schedule=dualpipev"), true); }
void BM_Replay1T_DualPipe_Recorded(benchmark::State& s) { replay(s, problem_1t(",schedule=dualpipe"), true); }

// The whole `estimate` of the 1T configuration: cost model + totals-only replay.
void BM_Estimate1T(benchmark::State& state) {
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch = 3072;
  const ModelSpec m = megatron_1t();
  const ClusterSpec c = load_cluster("dgx-a100:384");
  const ParallelConfig config = parse_parallel_config("dp=6,tp=8,pp=64,mbs=1,sp=true,zero=1,recompute=full");
  for (auto _ : state) benchmark::DoNotOptimize(estimate(m, c, t, config).iteration_time_s);
}

BENCHMARK(BM_Replay1T_1F1B_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_1F1B_TotalsOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_Interleaved_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_ZBH1_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_InBackward_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_InterleavedZB_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_ZBV_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_DualPipeV_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Replay1T_DualPipe_Recorded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Estimate1T)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
