// paratune-sim-trial: one training trial on the simulated cluster (simcluster.h), speaking the
// @paratune protocol like a real training script adapted for paratune.
//
//   paratune-sim-trial --scenario bert-a5000 [--params JSON] [--steps N] [--time-scale X] [--seed N]
//   paratune-sim-trial --scenario bert-a5000 --survey     # the space: valid, fitting, true optimum
//   paratune-sim-trial --print-scenarios-dir              # where the scenarios are read from
//
// The configuration comes from --params or PARATUNE_PARAMS (set by `paratune tune`), the number of
// steps from --steps or PARATUNE_MAX_STEPS (else the scenario's q_max). A configuration that is not a
// point of the scenario's space (e.g. one of examples/tune/space.yaml) is played on the same cluster
// and model as the one-point space of its own values, its parameters read by name as `tune --model`
// reads a space file (dp, tp, pp, mbs, zero, ckpt, ...; others ignored). Each step sleeps its
// simulated time x --time-scale (default 0.001: a 2 s step takes 2 ms) and reports the simulated
// (unscaled) time. Above the GPU's memory the trial fails after its first step the way PyTorch
// does. The noise seed defaults to one derived from PARATUNE_TRIAL_ID and the parameters.
//
// The scenarios: --scenarios-dir DIR; else, installed, DATADIR/paratune/scenarios found from this
// executable (/usr/bin/../share/paratune/scenarios in the .deb); else, in the build tree, the source
// tree's bench/simcluster/scenarios.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <thread>

#include "paratune/spec/error.h"
#include "paratune/spec/units.h"
#include "simcluster.h"

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The installed scenarios beside this executable, else the source tree's (a build-tree binary has
// nothing installed beside it). A path relative to the executable, not a compile-time absolute one:
// CPack installs under /usr whatever prefix the build was configured with, and `cmake --install
// --prefix DIR` may put the programs anywhere.
std::string default_scenarios_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path installed =
      ec ? std::filesystem::path() : (exe.parent_path() / PARATUNE_SCENARIOS_FROM_BINDIR).lexically_normal();
  if (!installed.empty() && std::filesystem::is_directory(installed, ec)) return installed.string();
  if (std::filesystem::is_directory(PARATUNE_SIMCLUSTER_DIR, ec)) return PARATUNE_SIMCLUSTER_DIR;
  throw paratune::Error(fmt::format("no scenarios: neither {} (installed beside this program) nor {} (the source "
                                    "tree) is a directory; give --scenarios-dir DIR",
                                    installed.empty() ? "DATADIR/paratune/scenarios" : installed.string(),
                                    PARATUNE_SIMCLUSTER_DIR));
}

int usage(const std::string& problem) {
  std::cerr << "paratune-sim-trial: " << problem
            << "\nusage: paratune-sim-trial --scenario NAME [--params JSON] [--steps N] [--time-scale X] [--seed N] "
               "[--scenarios-dir DIR] [--survey]\n       paratune-sim-trial [--scenarios-dir DIR] --print-scenarios-dir\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace paratune;
  std::string scenario_name, params_text = env("PARATUNE_PARAMS"), dir;
  int steps = std::atoi(env("PARATUNE_MAX_STEPS"));
  double time_scale = 1e-3;
  std::optional<std::uint64_t> seed;
  bool survey = false, print_dir = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw Error(a + ": needs a value");
        return argv[++i];
      };
      if (a == "--scenario") scenario_name = value();
      else if (a == "--params") params_text = value();
      else if (a == "--steps") steps = std::stoi(value());
      else if (a == "--time-scale") time_scale = std::stod(value());
      else if (a == "--seed") seed = std::stoull(value());
      else if (a == "--scenarios-dir") dir = value();
      else if (a == "--survey") survey = true;
      else if (a == "--print-scenarios-dir") print_dir = true;
      else return usage("unknown argument " + a);
    }
    if (dir.empty()) dir = default_scenarios_dir();
    else if (!std::filesystem::is_directory(dir)) throw Error(fmt::format("--scenarios-dir {}: not a directory", dir));
    if (print_dir) {
      std::cout << dir << "\n";
      return 0;
    }
    if (scenario_name.empty()) return usage("--scenario is required");
    simcluster::World world = simcluster::load_world(simcluster::scenario(dir, scenario_name));
    if (survey) {
      for (const tune::Point& p : world.space.enumerate())
        if (const simcluster::Truth t = simcluster::ground_truth(world, p); !t.valid) {
          std::cout << fmt::format("invalid, e.g. {}: {}\n", world.space.to_json(p).dump(), t.problem);
          break;
        }
      const simcluster::Optimum best = simcluster::optimum(world);
      std::cout << fmt::format("{}: {} points, {} valid, {} fit; true optimum {:.4f} steps/s ({:.3f} s/step) at {}\n",
                               world.scenario.title, world.space.enumerate().size(), best.valid, best.fitting,
                               best.throughput, 1 / best.throughput, world.space.to_json(best.point).dump());
      return 0;
    }
    if (params_text.empty()) return usage("no configuration: give --params JSON or set PARATUNE_PARAMS");
    const nlohmann::json params = nlohmann::json::parse(params_text);
    std::optional<tune::Point> point = world.space.point_of(params);
    if (!point && params.is_object()) {  // the one-point space of its own values
      std::string yaml = "parameters:\n";
      for (const auto& [name, value] : params.items()) yaml += fmt::format("  {}: [{}]\n", name, value.dump());
      world.space = tune::SearchSpace::parse(yaml, "--params");
      point = world.space.point_of(params);
    }
    if (!point) throw Error(fmt::format("--params {}: not a point of {}", params_text, world.scenario.space_file));
    if (steps <= 0) steps = world.scenario.steps;
    const simcluster::Truth truth = simcluster::ground_truth(world, *point);
    if (!truth.valid) {
      std::cerr << "paratune-sim-trial: invalid configuration: " << truth.problem << "\n";
      return 1;
    }
    std::mt19937_64 rng(seed.value_or(std::hash<std::string>{}(std::string(env("PARATUNE_TRIAL_ID")) + params_text)));
    for (int step = 1; step <= steps; ++step) {
      const double t = simcluster::noisy_step_time(truth.step_time_s, step, rng);
      std::this_thread::sleep_for(std::chrono::duration<double>(t * time_scale));
      if (truth.oom) {  // PyTorch fails in the first step's backward pass
        std::cerr << fmt::format("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a "
                                 "total capacity of {} of which 0 bytes is free (needs {}).\n",
                                 units::format_bytes(world.actual.gpu.memory_bytes),
                                 units::format_bytes(truth.peak_memory_bytes));
        return 1;
      }
      std::cout << fmt::format("@paratune {{\"step\": {}, \"step_time_s\": {:.9g}}}\n", step, t);
      if (step == 1) std::cout << fmt::format("@paratune {{\"peak_memory_bytes\": {:.0f}}}\n", truth.peak_memory_bytes);
      std::cout.flush();
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "paratune-sim-trial: " << e.what() << "\n";
    return 2;
  }
}
