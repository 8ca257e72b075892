// OptionError: the library names its options' fields, never a program's flags (issue 21).
#include "paratune/spec/option_error.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "paratune/hpo/bubble_coordinator.h"
#include "paratune/hpo/pruner.h"
#include "paratune/hpo/study.h"
#include "paratune/trial/protocol.h"
#include "paratune/trial/runner.h"
#include "paratune/tune/bayes.h"
#include "paratune/tune/study.h"

namespace paratune {
namespace {

TEST(OptionError, NamesTheFieldTheValueAndTheRule) {
  const OptionError e("max_trials", "-1", "must be >= 0 (0: no limit)");
  EXPECT_STREQ(e.what(), "option max_trials = -1: must be >= 0 (0: no limit)");
  EXPECT_EQ(e.field(), "max_trials");
  EXPECT_EQ(e.value(), "-1");
  EXPECT_STREQ(OptionError("name", "", "must not be empty").what(), "option name: must not be empty");
}

TEST(OptionError, RenderNamesEachOptionAsTheProgramDoes) {
  const OptionError e("min_steps", "7", "must be >= 1 and <= " + option_ref("steps") + " (5); " + option_ref("beta"));
  EXPECT_STREQ(e.what(), "option min_steps = 7: must be >= 1 and <= steps (5); beta");
  const OptionError::Namer flags = [](std::string_view field) -> std::optional<std::string> {
    if (field == "beta") return std::nullopt;  // no flag: the library's name stays
    return "--" + std::string(field == "min_steps" ? "min-steps" : field);
  };
  EXPECT_EQ(e.render(flags), "--min-steps 7: must be >= 1 and <= --steps (5); beta");
  EXPECT_EQ(OptionError("beta", "-1", "must be >= 0").render(flags), "option beta = -1: must be >= 0");
  // Braces are message text (command placeholders), not references.
  EXPECT_EQ(OptionError("command", "", "{strategy} needs " + option_ref("strategy")).render(flags),
            "--command: {strategy} needs --strategy");
  // with_context() keeps the library's names.
  EXPECT_STREQ(e.with_context("study 'a'").what(),
               "study 'a': option min_steps = 7: must be >= 1 and <= steps (5); beta");
}

// Runs `f`, which must throw an OptionError for `field`; returns its message.
std::string option_error_of(const std::string& field, const std::function<void()>& f) {
  try {
    f();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an OptionError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error for " << field;
  return "";
}

// Each validate() names the field, in the library's words: no flag of the paratune program. (A
// message is checked up to its length: `expect` gives the start.)
TEST(OptionError, ValidateOfEachOptionsStructNamesTheField) {
  std::vector<std::string> messages;
  const auto expect = [&](const std::string& field, const std::string& message, const std::function<void()>& f) {
    const std::string what = option_error_of(field, f);
    EXPECT_EQ(what.substr(0, message.size()), message);
    messages.push_back(what);
  };
  // A configuration study's options: the throughput objective (hpo::HpoOptions' default).
  hpo::HpoOptions study{.name = "s", .command = "run", .steps = 5, .trials_dir = "t"};
  expect("max_trials", "option max_trials = -1: must be >= 0 (0: no limit)", [&] {
    hpo::HpoOptions o = study;
    o.max_trials = -1;
    hpo::validate(o);
  });
  expect("limits.timeout_s", "option limits.timeout_s = -1: must be >= 0 (0: none)", [&] {
    hpo::HpoOptions o = study;
    o.limits.timeout_s = -1;
    hpo::validate(o);
  });
  expect("name", "option name: must not be empty", [&] {
    hpo::HpoOptions o = study;
    o.name.clear();
    hpo::validate(o);
  });
  expect("min_steps", "option min_steps = 7: must be >= 1 and <= max_resource (5)",
         [] { (void)hpo::make_pruner(hpo::PrunerKind::kOppa, hpo::PrunerOptions{.max_resource = 5, .min_steps = 7}); });
  expect("initial_points", "option initial_points = 0: must be >= 1",
         [] { tune::validate(tune::BayesOptions{.initial_points = 0}); });
  expect("beta", "option beta = -1: must be >= 0", [] { tune::validate(tune::BayesOptions{.beta = -1}); });
  expect("max_resource", "option max_resource = 0: must be >= 1 (the steps of a full trial)",
         [] { hpo::validate(hpo::PrunerOptions{}); });
  expect("min_resource", "option min_resource = 9: must be below max_resource (9) (the first rung is a partial trial)",
         [] { hpo::validate(hpo::PrunerOptions{.max_resource = 9, .min_resource = 9}); });
  hpo::HpoOptions hpo_options{.name = "s", .command = "run", .objective = "loss", .trials_dir = "t"};
  expect("trial_ranks", "option trial_ranks = 0: must be >= 1", [&] {
    hpo::HpoOptions o = hpo_options;
    o.trial_ranks = 0;
    hpo::validate(o);
  });
  expect("fuse", "option fuse = 0: must be a size from 1 to 64 (or fuse_auto)", [&] {
    hpo::HpoOptions o = hpo_options;
    o.fuse = 0;
    hpo::validate(o);
  });
  expect("surrogate_ratio",
         "option surrogate_ratio = 0.5: must be a number >= 1 (the surrogate is that many times narrower)", [&] {
           hpo::HpoOptions o = hpo_options;
           o.surrogate_ratio = 0.5;
           hpo::validate(o);
         });
  expect("step_time_regex", "option step_time_regex = 'step ([0-9.]+': not a valid regular expression in RE2 syntax",
         [] { trial::OutputParser(trial::ParserOptions{"step ([0-9.]+"}); });
  expect("slot_cpus", "option slot_cpus: gives 2 slots but slots is 3: give one CPU list per slot", [] {
    trial::LocalBackend(3, {}, {{0}, {0}});
  });
  expect("job_argv", "option job_argv: the job's command is required", [] { hpo::run_harvest(hpo::HarvestOptions{}); });
  for (const std::string& m : messages) EXPECT_EQ(m.find("--"), std::string::npos) << m;
}

}  // namespace
}  // namespace paratune
