// The paratune program: parse flags, call the library, print, choose the exit code.
// Exit codes: 0 success, 2 bad input (paratune::Error), 3 `plan` found nothing that fits or `tune`
// had no completed trial, 4 the study store stayed unavailable for longer than --store-retry
// (store::StoreUnavailable: a database server down, a full disk; run the command again when it is
// back), 128 + signal when `tune` was interrupted, 1 any other failure.
//
// Each subcommand is a file of its own (commands.h); this one registers them, parses the command
// line, runs the one chosen and turns its errors into messages and exit codes.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "commands.h"
#include "flag_errors.h"
#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"
#include "paratune/store/study_store.h"
#include "paratune/version.h"

namespace paratune::cli {
namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"paratune: plan, simulate and tune parallel training of large neural networks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("paratune {} (commit {})", paratune::version(), paratune::build_commit()));

  // In the order `paratune --help` lists them.
  Commands commands;
  add_presets_command(app, commands);
  add_model_command(app, commands);
  add_estimate_command(app, commands);
  add_simulate_command(app, commands);
  add_plan_command(app, commands);
  add_harvest_command(app, commands);
  add_tune_command(app, commands);
  add_study_command(app, commands);
  add_report_command(app, commands);
  add_dashboard_command(app, commands);
  add_validate_command(app, commands);
  add_calibrate_command(app, commands);
  add_profile_command(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // An unknown command or flag is named with a suggestion; CLI11 says the rest.
    if (const std::string problem = unknown_command_or_flag(app, argc, argv); !problem.empty()) {
      std::cerr << "paratune: error: " << problem << "\n";
      return 2;
    }
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    for (const Command& command : commands)
      if (*command.app) return command.run();
  } catch (const OptionError& e) {
    // The library names its options' fields; the user typed flags (option_flags.h).
    std::cerr << "paratune: error: " << option_error_message(app, e) << "\n";
    return 2;
  } catch (const store::StoreUnavailable& e) {
    std::cerr << "paratune: error: store unavailable: " << e.what() << "\n";
    return store::kStoreUnavailableExitCode;
  } catch (const Error& e) {
    std::cerr << "paratune: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "paratune: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace paratune::cli

// What a command printed must reach its reader: a full disk or a closed file behind the standard
// output (`paratune plan --json > /dev/full`) is an error, not a lost result with exit 0.
int main(int argc, char** argv) {
  const int status = paratune::cli::run_main(argc, argv);
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "paratune: cannot write the standard output (%s): what it printed is lost or incomplete\n",
                 std::strerror(errno));
    return status == 0 ? 1 : status;
  }
  return status;
}
