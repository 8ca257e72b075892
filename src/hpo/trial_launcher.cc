#include "trial_launcher.h"

#include <fmt/format.h>

#include <set>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/tune/study_common.h"

namespace paratune::hpo {
namespace {

// A copy of a checkpoint directory made of hard links (the program replaces files by renaming, so
// the original stays intact); files are copied where links are not possible.
void link_checkpoint(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::filesystem::remove_all(to);
  std::filesystem::create_directories(to);
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    if (!entry.is_regular_file()) continue;
    std::error_code ec;
    std::filesystem::create_hard_link(entry.path(), to / entry.path().filename(), ec);
    if (ec) std::filesystem::copy_file(entry.path(), to / entry.path().filename());
  }
}

std::filesystem::path trial_dir(const std::filesystem::path& trials_dir, int number) {
  return trials_dir / fmt::format("trial-{:04d}", number);
}

// --strategy auto: the rank counts above 1 the study's trials may have (the space's "ranks"
// parameter's values, else trial_ranks), each measured when a model is first seen.
std::vector<int> study_rank_counts(const Space& space, const HpoOptions& options) {
  std::set<int> ranks{options.trial_ranks};
  if (const std::optional<std::size_t> i = space.index_of("ranks")) {
    const ParamSpec& p = space.parameters()[*i];
    ranks.clear();
    for (const nlohmann::json& c : p.choices)
      if (c.is_number_integer()) ranks.insert(c.get<int>());
    if (p.type == ParamType::kInt)
      for (auto r = static_cast<int>(p.low); r <= static_cast<int>(p.high); ++r) ranks.insert(r);
  }
  std::vector<int> above_one;
  for (int r : ranks)
    if (r > 1) above_one.push_back(r);
  return above_one;
}

}  // namespace

std::string checkpoint_dir_name(std::int64_t steps) { return fmt::format("checkpoint-{}", steps); }

std::string TrialLauncher::run_id(int number) const { return fmt::format("{}-{:04d}", loop_.options.name, number); }

TrialLauncher::TrialLauncher(const LoopContext& loop, StudyTrials& trials)
    : loop_(loop), trials_(trials), trials_dir_(std::filesystem::absolute(loop.options.trials_dir)) {
  const HpoOptions& o = loop.options;
  if (o.strategy != kAutoStrategy) return;
  if (const TrainerProgram* trainer = trainer_of(o))
    strategies_ = trainer->strategy_chooser(trials_dir_ / "strategy-profiles", study_rank_counts(loop.space, o));
  if (!strategies_)
    throw OptionError("strategy", "auto",
                      fmt::format("picks each trial's strategy with paratune's cost model of {}, and the command runs "
                                  "'{}'; name the strategy (none, dp, mp, gpipe or dp+gpipe) for another program",
                                  paratune_train().name(), command_program(o.command)));
}

trial::TrialLaunch TrialLauncher::launch_for(const TrialRecord& r, const std::filesystem::path& dir,
                                             std::int64_t target, const std::string& strategy) const {
  const HpoOptions& o = loop_.options;
  trial::TrialLaunch launch =
      render_run(loop_.space, o, r.config, run_id(r.number), dir, static_cast<int>(target), o.steps, strategy);
  launch.serve = o.serve;
  // A run that stops short of the full resource rests at a rung: let the program checkpoint.
  if (target < loop_.options.steps || r.rung >= 0)
    launch.env.emplace_back("PARATUNE_CHECKPOINT_DIR", (dir / checkpoint_dir_name(target)).string());
  return launch;
}

nlohmann::ordered_json TrialLauncher::trial_config(const trial::TrialLaunch& launch, int bracket,
                                                   const std::string& strategy) const {
  return {{"study", loop_.options.name},
          {"command", loop_.options.command},
          {"steps", loop_.options.steps},
          {"objective", loop_.options.objective},
          {"direction", to_string(loop_.options.direction)},
          {"sampler", loop_.sampler.name()},
          {"pruner", loop_.pruner.name()},
          {"bracket", bracket},
          {"ranks", launch.slots},
          {"strategy", strategy},
          {"limits",
           {{"timeout_s", launch.limits.timeout_s},
            {"hang_s", launch.limits.hang_s},
            {"grace_s", launch.limits.grace_s},
            {"memory_limit_bytes", launch.limits.memory_limit_bytes}}},
          {"backend", loop_.backend.name()},
          {"argv", launch.argv}};
}

TrialLauncher::NewRun TrialLauncher::describe_new(const Config& config, const Assignment& assignment, int number,
                                                  const std::string& strategy,
                                                  const std::optional<FusedPlace>& fused) const {
  NewRun run;
  run.record.config = config;
  run.record.state = TrialRecord::State::kRunning;
  run.record.bracket = assignment.bracket;
  run.record.number = number;
  run.launch = launch_for(run.record, trial_dir(trials_dir_, number), assignment.resource, strategy);
  // What reproduces the trial: its command for the full resource, from scratch, alone.
  trial::TrialLaunch full = launch_for(run.record, run.launch.dir, loop_.options.steps, strategy);
  full.env.clear();
  nlohmann::ordered_json config_record = trial_config(run.launch, assignment.bracket, strategy);
  if (fused) config_record["fused"] = {{"dir", fused->group_dir.string()}, {"member", fused->member}};
  run.stored = {config_record.dump(), tune::shown_command(full), run.launch.dir.string(), /*location=*/""};
  run.resource = assignment.resource;
  run.strategy = strategy;
  return run;
}

Begun TrialLauncher::register_new(NewRun run, std::int64_t db_id, const nlohmann::ordered_json& notes) {
  if (!notes.empty()) loop_.store.set_prediction(db_id, notes.dump());
  if (const nlohmann::ordered_json model = loop_.sampler.model_summary(); !model.empty() && model != stored_model_) {
    loop_.store.set_model(trials_.study, model.dump());
    stored_model_ = model;
  }
  const int number = run.record.number;
  Book book{db_id, run.launch.dir, {}};
  book.state.bracket = run.record.bracket;
  book.state.runs = 1;
  book.state.strategy = run.strategy;
  trials_.books[number] = book;
  trials_.records.push_back(std::move(run.record));
  return {number, std::move(run.launch), run.resource};
}

Begun TrialLauncher::begin_new(const Config& config, nlohmann::ordered_json notes, const Assignment& assignment,
                               const std::optional<FusedPlace>& fused) {
  // --strategy auto: the cost model's choice for this trial's model, batch and ranks (measuring
  // the model's profile first when it is new), kept with the trial's notes.
  const HpoOptions& o = loop_.options;
  std::string strategy = o.strategy;
  if (strategies_) {
    // The trial's run as its program will read it: its command (any strategy will do for reading)
    // and its PARATUNE_PARAMS (a surrogate's narrowed widths among them).
    const trial::TrialLaunch read = render_run(loop_.space, o, config, "profile", trials_dir_ / "strategy-profiles",
                                               o.steps, o.steps, "dp");
    StrategyChooser::Choice choice = strategies_->choose(read, ranks_of(o, config));
    strategy = choice.strategy;
    if (!notes.is_object()) notes = nlohmann::ordered_json::object();
    notes["strategy_auto"] = std::move(choice.notes);
  }
  std::optional<NewRun> run;
  const std::int64_t db_id = loop_.store.begin_trial(trials_.study, config.dump(), [&](int n) {
                                     run = describe_new(config, assignment, n, strategy, fused);
                                     return run->stored;
                                   }).first;
  return register_new(std::move(*run), db_id, notes);
}

trial::TrialLaunch TrialLauncher::promotion_run(const TrialRecord& r, Book& book, std::int64_t resource,
                                                LiveRun& live, bool in_memory) const {
  // A trial another worker ran on another host (no shared file system): its run here goes into
  // this worker's trials directory, from step 0.
  if (loop_.options.worker.enabled && !std::filesystem::is_directory(book.dir))
    book.dir = trial_dir(trials_dir_, r.number);
  const std::filesystem::path from = book.dir / book.state.checkpoint_dir;
  // Its state on disk, or (serving) in a process's memory: the program resumes from either.
  const bool on_disk = std::filesystem::is_directory(from);
  const bool resume = book.state.checkpoint_step && *book.state.checkpoint_step + 1 == r.resource &&
                      !book.state.checkpoint_dir.empty() && (on_disk || in_memory);
  const std::filesystem::path to = book.dir / checkpoint_dir_name(resource);
  if (resume && on_disk) link_checkpoint(from, to);
  else std::filesystem::remove_all(to);
  live.number = r.number;
  live.target = resource;
  live.promotion = true;
  live.params_json = r.config.dump();
  if (!resume) {
    live.replaced.emplace(r.curve, r.resource);
    live.old_curve_shown = true;
  }
  live.steps_done = resume ? r.resource : 0;
  // The strategy of its first run: a checkpoint holds that run's stages.
  trial::TrialLaunch launch =
      launch_for(r, book.dir, resource, book.state.strategy.empty() ? loop_.options.strategy : book.state.strategy);
  launch.steps_done = live.steps_done;
  launch.append_logs = true;
  return launch;
}

trial::TrialLaunch TrialLauncher::fused_run(const std::vector<Begun>& members) const {
  const Begun& first = members.front();
  trial::TrialLaunch launch = render_run(loop_.space, loop_.options, trials_.record(first.number).config,
                                         first.launch.id + "-fused", first.launch.dir,
                                         static_cast<int>(first.resource), loop_.options.steps,
                                         trials_.books.at(first.number).state.strategy);
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const Begun& m : members) params.push_back(nlohmann::ordered_json::parse(m.launch.params_json));
  launch.params_json = params.dump();
  launch.limits.timeout_s *= static_cast<double>(members.size());  // the work of that many trials
  return launch;
}

}  // namespace paratune::hpo
