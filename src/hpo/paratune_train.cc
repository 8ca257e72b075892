// paratune-train (src/trainer) as the study engine talks to it (hpo/trainer_program.h): its fusable
// options (train/options.h fusable_options()), its surrogates (muP, train/mup.h) and the cost model
// of its strategies (train/strategy_cost.h), fed by `paratune-train --profile`.
#include "paratune/hpo/trainer_program.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/train/mup.h"
#include "paratune/train/options.h"
#include "paratune/train/strategy_cost.h"
#include "paratune/trial/command.h"
#include "paratune/trial/run_command.h"

namespace paratune::hpo {
namespace {

constexpr const char* kTrainerProgram = "paratune-train";
constexpr const char* kProfileLine = "@profile ";
constexpr double kProfileTimeoutS = 600;

// A run's options as paratune-train reads them: its command line and PARATUNE_PARAMS.
train::TrainOptions options_of(const trial::TrialLaunch& launch) {
  return train::read_train_options(std::vector<std::string>(launch.argv.begin() + 1, launch.argv.end()),
                                   launch.params_json, "");
}

std::string widths_of(const train::TrainOptions& o) {
  auto list = [](const std::vector<int>& values) {
    std::string text;
    for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
  };
  switch (o.model) {
    case train::Workload::kMlp: return "mlp_hidden " + list(o.mlp_hidden);
    case train::Workload::kCnn: return "cnn_channels " + list(o.cnn_channels);
    case train::Workload::kGpt: return fmt::format("d_model {}", o.d_model);
  }
  return "";
}

// --strategy auto by paratune's cost model of paratune-train: the model's per-layer costs on this
// host, measured once per model shape and rank count by `paratune-train --profile` (a few seconds
// each) and kept in the profiles directory.
class ParatuneTrainStrategies final : public StrategyChooser {
 public:
  ParatuneTrainStrategies(std::filesystem::path profiles_dir, std::vector<int> study_ranks)
      : profiles_dir_(std::move(profiles_dir)), study_ranks_(std::move(study_ranks)) {}

  Choice choose(const trial::TrialLaunch& launch, int ranks) override {
    Choice choice;
    train::TrainOptions trial_options;
    try {
      trial_options = options_of(launch);
    } catch (const Error& e) {
      choice.strategy = ranks == 1 ? "none" : "dp";
      choice.notes = {{"strategy", choice.strategy},
                      {"why", fmt::format("not chosen: {} refuses the options ({})", kTrainerProgram, e.what())}};
      return choice;
    }
    // A new model shape: every rank count's profile now, while none of its trials runs.
    for (int r : study_ranks_) (void)profile(launch.argv.front(), trial_options, r);
    if (ranks == 1) {
      choice.strategy = "none";
      choice.notes = {{"strategy", "none"}, {"why", "one rank"}};
      return choice;
    }
    trial_options.ranks = ranks;
    std::vector<std::string> rejected;
    const std::vector<train::StrategyPrediction> ranked =
        train::rank_strategies(trial_options, profile(launch.argv.front(), trial_options, ranks), &rejected);
    nlohmann::ordered_json predicted = nlohmann::ordered_json::object();
    for (const train::StrategyPrediction& p : ranked) {
      std::string name = train::to_string(p.strategy);
      if (p.strategy == train::Strategy::kDpGpipe) name += fmt::format(" (dp {} x pp {})", p.dp, p.pp);
      predicted[name] = p.step_s;
    }
    if (ranked.empty()) {
      choice.strategy = "dp";
      choice.notes = {{"strategy", "dp"}, {"why", "not chosen: no strategy can run this configuration"}, {"rejected", rejected}};
      return choice;
    }
    choice.strategy = train::to_string(ranked.front().strategy);
    choice.notes = {{"strategy", choice.strategy}, {"predicted_step_s", predicted}};
    if (!rejected.empty()) choice.notes["rejected"] = rejected;
    return choice;
  }

 private:
  const train::StrategyProfile& profile(const std::string& program, const train::TrainOptions& options, int ranks);

  std::filesystem::path profiles_dir_;
  std::vector<int> study_ranks_;
  std::map<std::string, train::StrategyProfile> profiles_;  // by profile command line
};

const train::StrategyProfile& ParatuneTrainStrategies::profile(const std::string& program,
                                                               const train::TrainOptions& options, int ranks) {
  std::vector<std::string> argv{program};
  for (const std::string& a : train::profile_model_arguments(options)) argv.push_back(a);
  argv.insert(argv.end(), {"--ranks", std::to_string(ranks), "--profile"});
  std::string key;
  for (const std::string& a : argv) key += trial::shell_quote(a) + " ";
  if (const auto it = profiles_.find(key); it != profiles_.end()) return it->second;

  // Kept on disk under a name from the command line, with the command line inside to check.
  const std::filesystem::path file =
      profiles_dir_ / fmt::format("profile-{:016x}.json", std::hash<std::string>{}(key));
  if (std::filesystem::exists(file)) {
    std::ifstream in(file);
    const nlohmann::json saved = nlohmann::json::parse(in, nullptr, false);
    if (!saved.is_discarded() && saved.value("command", "") == key)
      return profiles_[key] = train::StrategyProfile::from_json(saved["profile"], file.string());
  }
  trial::CommandOutput run;
  try {
    run = trial::run_command(argv, kProfileTimeoutS);
  } catch (const Error& e) {
    throw OptionError("strategy", "auto", fmt::format("measuring the strategy profile failed: {}", e.what()));
  }
  std::string line;
  for (std::size_t at = run.out.find(kProfileLine); at != std::string::npos; at = run.out.find(kProfileLine, at + 1))
    if (at == 0 || run.out[at - 1] == '\n') line = run.out.substr(at + std::strlen(kProfileLine), run.out.find('\n', at) - at - std::strlen(kProfileLine));
  if (!run.ok() || line.empty())
    throw OptionError("strategy", "auto",
                      fmt::format("measuring the strategy profile failed ({}): {}\n{}", key,
                                  run.ok() ? "no profile line" : run.describe_end(kProfileTimeoutS),
                                  trial::last_lines(run.err, 5)));
  const nlohmann::json json = nlohmann::json::parse(line, nullptr, false);
  train::StrategyProfile measured = train::StrategyProfile::from_json(json, key);
  std::filesystem::create_directories(profiles_dir_);
  const std::filesystem::path temporary = file.string() + ".tmp";
  std::ofstream(temporary) << nlohmann::ordered_json{{"command", key}, {"profile", measured.to_json()}}.dump(1) << "\n";
  std::filesystem::rename(temporary, file);
  return profiles_[key] = std::move(measured);
}

class ParatuneTrain final : public TrainerProgram {
 public:
  std::string name() const override { return kTrainerProgram; }

  bool runs(const std::string& command) const override {
    return std::filesystem::path(command_program(command)).filename() == kTrainerProgram;
  }

  std::vector<std::string> fusable_parameters() const override { return train::fusable_options(); }

  // Its options surrogate_ratio and parametrization (train/options.h): every width divided, under muP.
  std::optional<nlohmann::ordered_json> surrogate_params(double ratio) const override {
    return nlohmann::ordered_json{{"surrogate_ratio", ratio}, {"parametrization", "mup"}};
  }

  // The base of muP's rules is the target itself, so the transfer keeps every global value (the
  // learning rate, weight decay, momentum, ...): the per-layer factors that made the surrogate behave
  // like the target are 1 at the target's width. What changes is each layer's effective rate.
  Transfer transfer(const trial::TrialLaunch& target, double ratio) const override {
    const train::TrainOptions o = options_of(target);
    train::TrainOptions surrogate = o;
    surrogate.surrogate_ratio = ratio;
    train::resolve(surrogate);  // the widths divide (the trials ran), named if not
    Transfer t;
    t.optimizer = train::to_string(o.optimizer);
    t.surrogate_widths = widths_of(train::narrowed(surrogate));
    t.target_widths = widths_of(o);
    const double m = 1 / ratio;
    const struct {
      train::WeightRole role;
      double m_in, m_out;
    } roles[] = {{train::WeightRole::kInput, 1, m},
                 {train::WeightRole::kHidden, m, m},
                 {train::WeightRole::kOutput, m, 1},
                 {train::WeightRole::kVector, 1, m}};
    for (const auto& r : roles) {
      const train::MupScaling s = train::mup_scaling(r.role, o.optimizer, r.m_in, r.m_out);
      t.rates.push_back({train::to_string(r.role), o.lr * s.learning_rate, o.lr, o.weight_decay * s.weight_decay,
                         o.weight_decay});
    }
    return t;
  }

  std::unique_ptr<StrategyChooser> strategy_chooser(std::filesystem::path profiles_dir,
                                                    std::vector<int> study_ranks) const override {
    return std::make_unique<ParatuneTrainStrategies>(std::move(profiles_dir), std::move(study_ranks));
  }
};

}  // namespace

const TrainerProgram& paratune_train() {
  static const ParatuneTrain trainer;
  return trainer;
}

const TrainerProgram* trainer_for(const std::string& command) {
  return paratune_train().runs(command) ? &paratune_train() : nullptr;
}

std::string command_program(const std::string& command) {
  const std::vector<std::string> words = trial::split_words(command);
  return words.empty() ? "" : words.front();
}

}  // namespace paratune::hpo
