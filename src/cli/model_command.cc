// `paratune model`: a model's parameters and FLOPs per token.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "flag_checks.h"
#include "output.h"
#include "paratune/report/estimate_report.h"
#include "paratune/spec/io.h"

namespace paratune::cli {
namespace {

struct ModelFlags {
  std::string model_arg;
  int model_seq_len = 4096;
  bool json = false;
};

int run_model(const ModelFlags& f) {
  const ModelSpec model = load_model(f.model_arg);
  if (f.json) write_json(model_summary_json(model, f.model_seq_len));
  else std::cout << format_model_summary(model, f.model_seq_len);
  return 0;
}

}  // namespace

void add_model_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<ModelFlags>();
  auto* model_cmd = app.add_subcommand("model", "parameters and FLOPs per token of a model");
  model_cmd->add_option("model", flags->model_arg, "preset name or model file")->required();
  model_cmd->add_option("--seq-len", flags->model_seq_len, "sequence length for attention FLOPs")
      ->capture_default_str()
      ->transform(whole_number(1, kIntMax));
  model_cmd->add_flag("--json", flags->json, "machine-readable output");
  commands.push_back({model_cmd, [flags] { return run_model(*flags); }});
}

}  // namespace paratune::cli
