// `--config` strings ("dp=8,tp=8,pp=4,recompute_layers=2/4/4/0,...") and `--stage-meshes` lists
// ("4x2,2x4"), then resolve() against a dense GQA model, an MoE model and an MLA model.
// Properties: a resolved configuration printed by to_string() parses and resolves to itself (a
// plan's printed --config reproduces the plan); its chunk and recompute layouts are consistent.
#include <numeric>

#include "fuzz_target.h"
#include "paratune/spec/io.h"
#include "paratune/spec/presets.h"

namespace {

struct Setting {
  paratune::ModelSpec model;
  paratune::ClusterSpec cluster;
  paratune::TrainingSpec training;
};

std::vector<Setting> settings() {
  using namespace paratune;
  std::vector<Setting> out;
  for (const auto& [model, cluster, seq, batch] :
       {std::tuple{"llama3-8b", "dgx-h100:1", 4096, 64}, std::tuple{"mixtral-8x7b", "dgx-h100:4", 4096, 256},
        std::tuple{"deepseek-v3", "dgx-h100:8", 4096, 512}}) {
    Setting s{find_model_preset(model).spec, load_cluster(cluster), {}};
    s.training.seq_len = seq;
    s.training.global_batch = batch;
    out.push_back(s);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace paratune;
  static const std::vector<Setting> kSettings = settings();
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_result_or_error([&] { parse_stage_meshes(text); });
  return fuzz::expect_result_or_error([&] {
    const ParallelConfig config = parse_parallel_config(text);
    for (const Setting& s : kSettings) {
      ParallelConfig resolved;
      try {
        resolved = resolve(config, s.model, s.cluster, s.training);
      } catch (const Error&) {
        continue;
      }
      const std::string printed = to_string(resolved);
      ParallelConfig again;
      try {
        again = resolve(parse_parallel_config(printed), s.model, s.cluster, s.training);
      } catch (const Error& e) {
        std::fprintf(stderr, "%s\n%s\n", printed.c_str(), e.what());
        fuzz::require(false, "a resolved configuration's to_string() parses and resolves again");
      }
      if (to_json(again) != to_json(resolved))
        std::fprintf(stderr, "%s\n%s\n%s\n", printed.c_str(), to_json(resolved).dump().c_str(),
                     to_json(again).dump().c_str());
      fuzz::require(to_json(again) == to_json(resolved), "to_string() of a resolved configuration resolves to itself");
      const std::vector<int> chunks = chunk_layers(resolved);
      fuzz::require(chunks.size() == static_cast<std::size_t>(resolved.pp) * static_cast<std::size_t>(resolved.vpp) &&
                        std::accumulate(chunks.begin(), chunks.end(), 0) == s.model.num_layers,
                    "the chunks hold every layer once");
      const std::vector<int> recomputed = recomputed_layers_per_stage(resolved);
      for (std::size_t i = 0; i < recomputed.size(); ++i)
        fuzz::require(recomputed[i] >= 0 && recomputed[i] <= resolved.stage_layers[i],
                      "a stage recomputes between 0 and all of its layers");
    }
  });
}
