// paratune-function-trial FUNCTION [--curve] [--sleep SECONDS] [--fail-above NAME VALUE] [--fail-code C]
//                                  [--step-time-is-value] [--metric-after-step] [--metric-without-step]
//                                  [--ignore-checkpoint]
//
// A trial program (README "Trial protocol") whose objective is a standard test function of its
// parameters, read from PARATUNE_PARAMS as x1, x2, ...:
//   branin       x1 in [-5, 10], x2 in [0, 15]; minimum 0.397887 (Dixon & Szego 1978)
//   hartmann6    x1..x6 in [0, 1]; minimum -3.32237
//   rosenbrock4  x1..x4 (usually in [-5, 10]); minimum 0 at (1, 1, 1, 1); rosenbrock20 likewise in 20-d
//   levy10       x1..x10 in [-10, 10]; minimum 0 at (1, ..., 1)
//   abc          parameters a, b, c (> 0; issue 21 item 17 searches a, b in {1, 2, 4, 8}, c in {0..3}):
//                (1 + (log2 b - 1)^2 + (c - 2)^2 / 4) / a, falling with a, so that a model is drawn
//                towards large a; with --fail-above a 2 the best that runs is 0.5 at (2, 2, 2)
// (definitions as in Surjanovic & Bingham, Virtual Library of Simulation Experiments,
// sfu.ca/~ssurjano). It runs PARATUNE_MAX_STEPS steps (1 when unset) and reports the metric "value"
// at every step: f(x), or with --curve a learning curve f(x) + 10 / (step + 1) that reaches f(x)
// only at the end but ranks trials as f does at every step (so a pruner's decisions can be worked
// out by hand). --step-time-is-value reports f(x) as each step's step_time_s instead of the time the
// step took, so that a tuning study's throughput is exactly 1 / f(x). With PARATUNE_CHECKPOINT_DIR it saves its step there after the last one (and says
// so) and resumes after it when run again. --fail-above NAME VALUE exits at once, before any output
// line, when parameter NAME exceeds VALUE (a region of failing trials), with code 1 or --fail-code C
// (3: as a framework that refuses an invalid configuration at start-up). --sleep makes each step take that long. For the
// controller's tests, programs that report differently: --metric-after-step prints each value after
// its step line, --metric-without-step leaves "step" out of the metric line, --ignore-checkpoint
// announces checkpoints but always starts from step 0.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

double branin(const std::vector<double>& x) {
  const double pi = std::acos(-1.0);
  const double a = 1, b = 5.1 / (4 * pi * pi), c = 5 / pi, r = 6, s = 10, t = 1 / (8 * pi);
  const double u = x[1] - b * x[0] * x[0] + c * x[0] - r;
  return a * u * u + s * (1 - t) * std::cos(x[0]) + s;
}

double hartmann6(const std::vector<double>& x) {
  static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                 {0.05, 10, 17, 0.1, 8, 14},
                                 {3, 3.5, 1.7, 10, 17, 8},
                                 {17, 8, 0.05, 10, 0.1, 14}};
  static const double P[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                 {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                 {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                 {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 6; ++j) inner += A[i][j] * (x[j] - P[i][j]) * (x[j] - P[i][j]);
    sum += alpha[i] * std::exp(-inner);
  }
  return -sum;
}

double rosenbrock(const std::vector<double>& x) {
  double sum = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i)
    sum += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
  return sum;
}

// Levy: w_i = 1 + (x_i - 1) / 4; sin^2(pi w_1) + sum_{i<d} (w_i - 1)^2 (1 + 10 sin^2(pi w_i + 1))
// + (w_d - 1)^2 (1 + sin^2(2 pi w_d)).
double levy(const std::vector<double>& x) {
  const double pi = std::acos(-1.0);
  const auto w = [&](std::size_t i) { return 1 + (x[i] - 1) / 4; };
  const auto sin2 = [](double a) { return std::sin(a) * std::sin(a); };
  double sum = sin2(pi * w(0));
  for (std::size_t i = 0; i + 1 < x.size(); ++i) sum += (w(i) - 1) * (w(i) - 1) * (1 + 10 * sin2(pi * w(i) + 1));
  const double last = w(x.size() - 1);
  return sum + (last - 1) * (last - 1) * (1 + sin2(2 * pi * last));
}

// Issue 21 item 17's landscape (see the header comment).
double abc(const std::vector<double>& x) {
  const double b = std::log2(x[1]) - 1, c = x[2] - 2;
  return (1 + b * b + c * c / 4) / x[0];
}

int fail(const std::string& message) {
  std::fprintf(stderr, "paratune-function-trial: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::pair<std::vector<std::string>, double (*)(const std::vector<double>&)>> functions{
      {"abc", {{"a", "b", "c"}, abc}},
      {"branin", {{"x1", "x2"}, branin}},
      {"levy10", {{"x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10"}, levy}},
      {"hartmann6", {{"x1", "x2", "x3", "x4", "x5", "x6"}, hartmann6}},
      {"rosenbrock4", {{"x1", "x2", "x3", "x4"}, rosenbrock}},
      {"rosenbrock20", {[] {
                          std::vector<std::string> names;
                          for (int d = 1; d <= 20; ++d) names.push_back("x" + std::to_string(d));
                          return names;
                        }(),
                        rosenbrock}}};
  if (argc < 2 || !functions.contains(argv[1]))
    return fail("usage: FUNCTION (abc | branin | hartmann6 | levy10 | rosenbrock4 | rosenbrock20) [--curve] [--sleep S] [--fail-above NAME VALUE] "
                "[--fail-code C] [--step-time-is-value]");
  const auto [names, function] = functions.at(argv[1]);
  bool curve = false, metric_after_step = false, metric_without_step = false, ignore_checkpoint = false;
  bool step_time_is_value = false;
  int fail_code = 1;
  double sleep_s = 0;
  std::string fail_name;
  double fail_value = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--curve") curve = true;
    else if (a == "--metric-after-step") metric_after_step = true;
    else if (a == "--metric-without-step") metric_without_step = true;
    else if (a == "--ignore-checkpoint") ignore_checkpoint = true;
    else if (a == "--step-time-is-value") step_time_is_value = true;
    else if (a == "--fail-code" && i + 1 < argc) fail_code = std::atoi(argv[++i]);
    else if (a == "--sleep" && i + 1 < argc) sleep_s = std::atof(argv[++i]);
    else if (a == "--fail-above" && i + 2 < argc) {
      fail_name = argv[++i];
      fail_value = std::atof(argv[++i]);
    } else return fail("unknown argument " + a);
  }
  const char* params_text = std::getenv("PARATUNE_PARAMS");
  const nlohmann::json params = nlohmann::json::parse(params_text ? params_text : "{}", nullptr, false);
  if (!params.is_object()) return fail("PARATUNE_PARAMS: not a JSON object");
  std::vector<double> x;
  for (const std::string& name : names) {
    if (!params.contains(name) || !params[name].is_number()) return fail("PARATUNE_PARAMS: needs a number " + name);
    x.push_back(params[name].get<double>());
  }
  if (!fail_name.empty() && params.contains(fail_name) && params[fail_name].is_number() &&
      params[fail_name].get<double>() > fail_value) {
    std::fprintf(stderr, "paratune-function-trial: invalid configuration: %s > %g (failing as asked)\n",
                 fail_name.c_str(), fail_value);
    return fail_code;
  }
  const char* max_text = std::getenv("PARATUNE_MAX_STEPS");
  const long steps = max_text ? std::atol(max_text) : 1;
  const char* checkpoint_dir = std::getenv("PARATUNE_CHECKPOINT_DIR");
  const std::string state_path = checkpoint_dir ? std::string(checkpoint_dir) + "/state.json" : "";
  long first = 0;
  if (checkpoint_dir && !ignore_checkpoint) {
    std::ifstream in(state_path);
    const nlohmann::json state = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
    if (state.is_object() && state.contains("step")) first = state["step"].get<long>() + 1;
  }
  const double value = function(x);
  for (long step = first; step < steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
    const double reported = curve ? value + 10.0 / static_cast<double>(step + 1) : value;
    const auto print_metric = [&] {
      if (metric_without_step) std::printf("@paratune {\"metric\": \"value\", \"value\": %.17g}\n", reported);
      else std::printf("@paratune {\"metric\": \"value\", \"value\": %.17g, \"step\": %ld}\n", reported, step);
    };
    if (!metric_after_step) print_metric();
    if (checkpoint_dir && step + 1 == steps) {
      std::filesystem::create_directories(checkpoint_dir);
      std::ofstream(state_path) << nlohmann::json{{"step", step}}.dump();
      std::printf("@paratune {\"checkpoint_step\": %ld}\n", step);
    }
    const double seconds = std::max(1e-6, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::printf("@paratune {\"step\": %ld, \"step_time_s\": %.9g}\n", step, step_time_is_value ? value : seconds);
    if (metric_after_step) print_metric();
    std::fflush(stdout);
  }
  return 0;
}
