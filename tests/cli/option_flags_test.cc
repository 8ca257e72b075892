// The library names options' fields; the paratune program names its flags (src/cli/option_flags.h).
#include "../../src/cli/option_flags.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli_util.h"

namespace {

using paratune::cli::flag_for;
using paratune::cli::kOptionFlags;
using paratune::testing::Result;
using paratune::testing::run;

// The flags `paratune ARGS --help` registers: the names leading each line of its option list.
std::set<std::string> registered_flags(const std::string& args) {
  const Result r = run(args + " --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> flags;
  std::istringstream in(r.output);
  const std::regex name("--[a-z0-9][a-z0-9-]*");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  -", 0) != 0) continue;  // an option's line starts with its names
    const std::string names = line.substr(2, line.find(' ', 2) - 2);
    for (std::sregex_iterator it(names.begin(), names.end(), name), end; it != end; ++it) flags.insert(it->str());
  }
  return flags;
}

// Every subcommand's flags, by subcommand ("study show" for nested ones).
std::map<std::string, std::set<std::string>> flags_by_command() {
  std::map<std::string, std::set<std::string>> out;
  for (const char* command :
       {"presets", "model", "estimate", "simulate", "plan", "harvest", "tune", "study show", "validate", "calibrate",
        "dashboard"})
    out[command] = registered_flags(command);
  return out;
}

TEST(OptionFlags, FlagForUsesTheTableThenKebabCaseWhereTheFlagExists) {
  const std::set<std::string> registered{"--max-trials", "--parallel", "--slots", "--study-name", "--steps"};
  std::set<std::string> given;
  const auto is_registered = [&](std::string_view f) { return registered.contains(std::string(f)); };
  const auto is_given = [&](std::string_view f) { return given.contains(std::string(f)); };
  const auto flag = [&](std::string_view command, std::string_view field) {
    return flag_for(command, field, is_registered, is_given).value_or("(none)");
  };
  EXPECT_EQ(flag("tune", "max_trials"), "--max-trials");
  EXPECT_EQ(flag("tune", "name"), "--study-name");
  EXPECT_EQ(flag("tune", "max_resource"), "--steps");
  EXPECT_EQ(flag("tune", "beta"), "(none)");            // no --beta: never an invented flag
  EXPECT_EQ(flag("tune", "limits.spare_s"), "(none)");  // nested and not listed
  EXPECT_EQ(flag("harvest", "max_trials"), "--max-trials");
  EXPECT_EQ(flag("harvest", "job_argv"), "--job");  // each subcommand its own table
  EXPECT_EQ(flag("tune", "job_argv"), "(none)");
  EXPECT_EQ(flag("tune", "slots"), "--parallel");  // aliases: the one given, else the first
  given.insert("--slots");
  EXPECT_EQ(flag("tune", "slots"), "--slots");
}

// The table cannot rot: each flag it names is one the subcommand registers with CLI11.
TEST(OptionFlags, EveryFlagInTheTableIsRegistered) {
  const auto flags = flags_by_command();
  for (const auto& entry : kOptionFlags) {
    const std::string command(entry.command);
    ASSERT_TRUE(flags.contains(command)) << command;
    std::string_view rest = entry.flags;
    while (!rest.empty()) {
      const std::string_view alias = rest.substr(0, rest.find('|'));
      const std::string flag(alias.substr(0, alias.find(' ')));  // "--fuse auto": the flag and a value
      EXPECT_TRUE(flags.at(command).contains(flag)) << command << " " << entry.field << ": " << flag;
      rest = rest.find('|') == std::string_view::npos ? std::string_view() : rest.substr(rest.find('|') + 1);
    }
  }
}

// Every field the library names in an OptionError (OptionError("field", ...), option_ref("field"))
// has a flag in some subcommand, or is one no flag sets.
TEST(OptionFlags, EveryFieldTheLibraryNamesHasAFlag) {
  // tune::BayesOptions::beta and hpo::PrunerOptions::z (OPPA's early termination): the CLI keeps the
  // defaults; dashboard::DashboardOptions::locator: the positional STUDY argument, which the CLI requires;
  // hpo::AskTellOptions' heartbeats: in-process studies (Python, C++) only, the CLI runs none.
  const std::set<std::string> flagless{"beta", "z", "locator", "heartbeat_s", "heartbeat_timeout_s"};
  const auto flags = flags_by_command();
  const std::regex named(R"((?:OptionError|option_ref)\("([a-z_.]+)\")");
  std::set<std::string> fields;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(PARATUNE_SOURCE_DIR) + "/src")) {
    if (entry.path().extension() != ".cc" || entry.path().parent_path().filename() == "cli") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::sregex_iterator it(text.begin(), text.end(), named), end; it != end; ++it) fields.insert((*it)[1]);
  }
  EXPECT_GT(fields.size(), 20u);  // the scan found the throw sites
  for (const std::string& field : fields) {
    if (flagless.contains(field)) continue;
    bool mapped = false;
    for (const auto& [command, registered] : flags)
      mapped = mapped || flag_for(
                             command, field, [&](std::string_view f) { return registered.contains(std::string(f)); },
                             [](std::string_view) { return false; });
    EXPECT_TRUE(mapped) << field << ": no flag sets it; add it to kOptionFlags or to `flagless` here";
  }
}

// The same bad values through the program: each message names the flag the user typed.
TEST(OptionFlags, TheProgramNamesFlags) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "option_flags";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "parameters:\n  x: [1, 2]\n";
  const std::string tune = "tune --space " + (dir / "space.yaml").string() + " --study " + (dir / "s.db").string() +
                           " --command 'echo {x}' ";
  const auto expect = [](const std::string& args, const std::string& message) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("paratune: error: " + message + "\n"), std::string::npos) << args << "\n" << r.output;
  };
  expect(tune + "--steps 1", "--steps 1: must be >= 2 (the first step is dropped as warm-up)");
  expect(tune + "--algo oppa --steps 10 --min-steps 12", "--min-steps 12: must be >= 1 and <= --steps (10)");
  expect(tune + "--study-name ''", "--study-name: must not be empty");
  expect(tune + "--slots 3 --slot-cpus '0;0'",
         "--slot-cpus: gives 2 slots but --slots is 3: give one CPU list per slot");
  expect(tune + "--slot-cpus '0;0'", "--slot-cpus: gives 2 slots but --parallel is 1: give one CPU list per slot");
  expect(tune + "--algo tpe --objective v --direction minimize --pruner asha --steps 4 --min-resource 4",
         "--min-resource 4: must be below --steps (4) (the first rung is a partial trial)");
  expect(tune + "--algo tpe --objective v --direction minimize --fuse 0",
         "--fuse 0: must be a size from 1 to 64 (or --fuse auto)");
  expect(tune + "--step-time-regex 'step'",
         "--step-time-regex 'step': needs a group ( ... ) around the step time in "
         "seconds");
  std::ofstream(dir / "params.jsonl") << "{}\n";
  expect("harvest --job /no/such/job --trial true --trial-params " + (dir / "params.jsonl").string(),
         "--job: '/no/such/job' is not an executable program (nor one on PATH)");
}

// What a library error message contains: the string literals of each Error(...), OptionError(...)
// and with_context(...) call in `text`, with the line each starts on.
std::vector<std::pair<int, std::string>> error_literals(const std::string& text) {
  std::vector<std::pair<int, std::string>> out;
  const std::regex call(R"(\b(?:Error|OptionError|with_context|fail|require)\()");
  for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
    const auto start = static_cast<std::size_t>(it->position() + it->length());
    const int line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(start), '\n'));
    std::string literals;
    int depth = 1;
    for (std::size_t i = start; i < text.size() && depth > 0; ++i) {
      const char c = text[i];
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') i = text.find('\n', i);
      if (i == std::string::npos) break;
      if (c == '\'' || c == '"') {  // a literal, escapes skipped
        std::size_t j = i + 1;
        for (; j < text.size() && text[j] != c; ++j)
          if (text[j] == '\\') ++j;
        if (c == '"') literals += text.substr(i + 1, j - i - 1) + " ";
        i = j;
      }
    }
    out.emplace_back(line, literals);
  }
  return out;
}

// No library error message names a flag of the paratune program: the library speaks of option
// fields. Left out: the program (src/cli), paratune-train's own command line (src/trainer; its
// options in src/train are its flags too, none a paratune flag) and the launch module (src/launch:
// the emitters, the schema checks and the framework rules), whose flags are the frameworks'.
TEST(OptionFlags, NoLibraryErrorMessageNamesAParatuneFlag) {
  std::set<std::string> paratune_flags;
  for (const auto& [command, registered] : flags_by_command())
    paratune_flags.insert(registered.begin(), registered.end());
  paratune_flags.erase("--help");
  // A framework's own flag that paratune mirrors: named as the framework's.
  const std::set<std::pair<std::string, std::string>> framework_flags{
      {"src/spec/parallel.cc", "--fp8-param-gather"}};  // "Megatron-LM --fp8-param-gather needs ..."
  const std::filesystem::path root(PARATUNE_SOURCE_DIR);
  const std::regex flag("--[a-z0-9][a-z0-9-]*");
  int scanned = 0;
  for (const char* top : {"src", "include"})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / top)) {
      const std::string path = std::filesystem::relative(entry.path(), root).string();
      if (entry.path().extension() != ".cc" && entry.path().extension() != ".h") continue;
      if (path.starts_with("src/cli/") || path.starts_with("src/trainer/") || path.starts_with("src/launch/")) continue;
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (const auto& [line, literals] : error_literals(text)) {
        ++scanned;
        for (std::sregex_iterator it(literals.begin(), literals.end(), flag), end; it != end; ++it)
          if (paratune_flags.contains(it->str()) && !framework_flags.contains({path, it->str()}))
            ADD_FAILURE() << path << ":" << line << ": names the paratune flag " << it->str() << " in \"" << literals
                          << "\"";
      }
    }
  EXPECT_GT(scanned, 300);  // the scan found the library's errors
}

}  // namespace
