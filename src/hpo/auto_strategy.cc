#include "auto_strategy.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <set>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/trial/command.h"
#include "paratune/trial/run_command.h"
#include "paratune/tune/study_common.h"
#include "trainer_command.h"

namespace paratune::hpo {
namespace {

constexpr const char* kTrainer = kTrainerProgram;
constexpr const char* kProfileLine = "@profile ";
constexpr double kProfileTimeoutS = 600;

}  // namespace

AutoStrategy::AutoStrategy(const Space& space, const HpoOptions& options, std::filesystem::path profiles_dir)
    : space_(space), options_(options), profiles_dir_(std::move(profiles_dir)) {
  if (!runs_trainer(options.command))
    throw OptionError("strategy", "auto",
                      fmt::format("picks each trial's strategy with paratune's cost model of {}, and the command runs "
                                  "'{}'; name the strategy (none, dp, mp, gpipe or dp+gpipe) for another program",
                                  kTrainer, command_program(options.command)));
  // The rank counts: the space's "ranks" parameter's values, else trial_ranks.
  std::set<int> ranks{options.trial_ranks};
  if (const std::optional<std::size_t> i = space.index_of("ranks")) {
    const ParamSpec& p = space.parameters()[*i];
    ranks.clear();
    for (const nlohmann::json& c : p.choices)
      if (c.is_number_integer()) ranks.insert(c.get<int>());
    if (p.type == ParamType::kInt)
      for (auto r = static_cast<int>(p.low); r <= static_cast<int>(p.high); ++r) ranks.insert(r);
  }
  for (int r : ranks)
    if (r > 1) study_ranks_.push_back(r);
}

AutoStrategy::Choice AutoStrategy::choose(const Config& config, int ranks) {
  Choice choice;
  // The trial's options as paratune-train will read them: its command (any strategy will do for
  // reading) and its PARATUNE_PARAMS (a surrogate's narrowed widths among them).
  const trial::TrialLaunch launch = render_run(space_, options_, config, "profile", profiles_dir_, options_.steps,
                                               options_.steps, "dp");
  train::TrainOptions trial_options;
  try {
    trial_options = train::read_train_options(std::vector<std::string>(launch.argv.begin() + 1, launch.argv.end()),
                                              launch.params_json, "");
  } catch (const Error& e) {
    choice.strategy = ranks == 1 ? "none" : "dp";
    choice.notes = {{"strategy", choice.strategy},
                    {"why", fmt::format("not chosen: {} refuses the options ({})", kTrainer, e.what())}};
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

const train::StrategyProfile& AutoStrategy::profile(const std::string& program, const train::TrainOptions& options,
                                                    int ranks) {
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

}  // namespace paratune::hpo
