// `paratune dashboard`: a study's views served live over HTTP while `paratune tune` runs.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "duration_flag.h"
#include "paratune/dashboard/server.h"
#include "paratune/store/study_store.h"
#include "stop_signal.h"

namespace paratune::cli {
namespace {

// `paratune dashboard STUDY`: the study's views, live, until Ctrl-C.
int run_dashboard(dashboard::DashboardOptions options, const std::string& poll) {
  options.poll_s = optional_duration(poll, "--poll");
  dashboard::DashboardServer server(options);
  const int port = server.bind();
  if (!dashboard::is_loopback_host(options.host))
    std::cerr << fmt::format("paratune dashboard: warning: listening on {}, not only this machine: anyone who can reach "
                             "it can read the study (its commands, parameters and paths); there is no login\n",
                             options.host);
  std::cout << fmt::format("paratune dashboard: {} at {} (Ctrl-C to stop)\n", store::mask_locator(options.locator),
                           dashboard::dashboard_url(options.host, port))
            << std::flush;
  install_stop_handlers();
  server.serve(g_stop_signal);
  return 0;
}

}  // namespace

void add_dashboard_command(CLI::App& app, Commands& commands) {
  struct DashboardFlags {
    dashboard::DashboardOptions options;
    std::string poll = "2s";
  };
  const auto flags = std::make_shared<DashboardFlags>();
  dashboard::DashboardOptions& options = flags->options;
  auto* dashboard_cmd = app.add_subcommand(
      "dashboard", "serve a study's report live over HTTP while `paratune tune` runs (reads the store only)");
  dashboard_cmd->add_option("study", options.locator, "study store: SQLite file or postgresql:// URI (it may not "
                                                      "exist yet: the page waits for it)")->required();
  dashboard_cmd->add_option("--study-name", options.study_name, "study within the store (needed when it holds several)");
  dashboard_cmd->add_option("--host", options.host, "address to listen on (default 127.0.0.1: this machine only; "
                                                    "another address warns: there is no login)")
      ->capture_default_str();
  dashboard_cmd->add_option("--port", options.port, "port (0: any free one, printed)")->capture_default_str();
  dashboard_cmd->add_option("--poll", flags->poll, "how often the page reads the study")->capture_default_str();
  commands.push_back({dashboard_cmd, [flags] { return run_dashboard(flags->options, flags->poll); }});
}

}  // namespace paratune::cli
