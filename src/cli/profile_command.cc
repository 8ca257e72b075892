// `paratune profile`: measure the user's own GPU (or CPU) on the kernels the cost model prices for a
// model's configurations, write a hardware profile and print measured against predicted
// (docs/profile.md). The measuring is Python with PyTorch (python/paratune/profile.py), run here
// as `python3 -m paratune.profile`; this side writes its plan and reads its profile.
#include <fmt/format.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "flag_checks.h"
#include "output.h"
#include "paratune/calib/profile_fit.h"
#include "paratune/calib/published_runs.h"
#include "paratune/cost/hardware_profile.h"
#include "paratune/cost/profile_plan.h"
#include "paratune/spec/error.h"
#include "paratune/spec/io.h"
#include "paratune/trial/run_command.h"
#include "setup_flags.h"

namespace paratune::cli {
namespace {

struct ProfileFlags {
  std::vector<std::string> configs;
  bool quick = false;
  // Unset (-1): the plan's defaults, fewer with --quick (kQuick* below).
  int warmup = -1, repetitions = -1;
  int nproc = 1;
  std::string out = "profile.json";
  std::string plan_path;       // where the plan is written (default: OUT with .plan.json)
  bool plan_only = false;      // write the plan and stop (to measure under torchrun yourself)
  std::string from;            // an existing profile: only compare
  std::string fit_calibration;  // write the calibration fitted to the profile there
  std::string python = "python3";
  double timeout_s = 3600;
};

std::string default_plan_path(const std::string& out) {
  std::filesystem::path p(out);
  p.replace_extension();
  return p.string() + ".plan.json";
}

// Makes the measurer importable: next to a build's program it lies in build/python; an installed
// program's package is on the interpreter's own path.
void add_python_path() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return;
  const std::filesystem::path built = self.parent_path() / "python";
  if (!std::filesystem::exists(built / "paratune" / "profile.py")) return;
  const char* old = std::getenv("PYTHONPATH");
  const std::string value = built.string() + (old && *old ? ":" + std::string(old) : "");
  ::setenv("PYTHONPATH", value.c_str(), 1);
}

// What tells a file written anew from one left as it was: its inode (a rename puts another there),
// size and modification time.
struct FileStamp {
  std::uintmax_t inode = 0, size = 0;
  std::int64_t modified_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
std::optional<FileStamp> stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{st.st_ino, static_cast<std::uintmax_t>(st.st_size),
                   static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

void measure(const ProfileFlags& f, const std::string& plan_path) {
  add_python_path();
  std::vector<std::string> argv = {f.python, "-m", "paratune.profile", "--plan", plan_path, "--out", f.out};
  if (f.nproc > 1) {
    argv.emplace_back("--nproc");
    argv.push_back(std::to_string(f.nproc));
  }
  std::cerr << "measuring (" << fmt::format("{}", fmt::join(argv, " ")) << ") ...\n";
  const std::optional<FileStamp> before = stamp_of(f.out);
  trial::CommandOutput run;
  try {
    run = trial::run_command(argv, f.timeout_s);
  } catch (const Error& e) {
    throw e.with_context("--python");  // not found, not executable
  }
  std::cerr << run.err;
  if (!run.ok())
    throw Error(fmt::format("the measurer ({} -m paratune.profile) {}: {}", f.python,
                            run.timed_out ? fmt::format("ran past --timeout {:g} s and was stopped", f.timeout_s)
                                          : "ended with " + run.describe_end(f.timeout_s),
                            trial::last_lines(run.err + run.out, 12)));
  // An --out left from an earlier run must not pass for this one's: the measurer writes it anew
  // (a temporary file renamed over it), or it did not write it.
  const std::optional<FileStamp> after = stamp_of(f.out);
  if (!after || (before && *before == *after))
    throw Error(fmt::format(
        "the measurer ({} -m paratune.profile) exited with code 0 but wrote no profile to --out {}{}: {}", f.python,
        f.out, after ? " (the file there is an earlier run's)" : "", trial::last_lines(run.err + run.out, 12)));
}

std::string seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

// Per kind: how many, the sums, and the median |error| of the model per row.
std::string format_comparison(const ProfileComparison& c, const HardwareProfile& p) {
  std::string out = fmt::format("measured on {} ({}), profile {}\n\n",
                                p.device.value("name", std::string("?")), p.device.value("backend", std::string("?")),
                                p.source);
  out += fmt::format("{:<20} {:>5} {:>14} {:>14} {:>10} {:>16}\n", "kind", "rows", "measured", "model", "model/meas.",
                     "median |error|");
  std::vector<std::string> kinds;
  for (const auto& r : c.rows)
    if (std::find(kinds.begin(), kinds.end(), r.kind) == kinds.end()) kinds.push_back(r.kind);
  for (const std::string& kind : kinds) {
    double measured = 0, model = 0;
    std::vector<double> errors;
    for (const auto& r : c.rows)
      if (r.kind == kind) {
        measured += r.measured_s;
        model += r.model_s;
        errors.push_back(std::abs(r.model_s / r.measured_s - 1));
      }
    std::sort(errors.begin(), errors.end());
    const double median = errors.size() % 2 ? errors[errors.size() / 2]
                                            : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
    out += fmt::format("{:<20} {:>5} {:>14} {:>14} {:>10.2f} {:>15.1f}%\n", kind, errors.size(), seconds(measured),
                       seconds(model), model / measured, 100 * median);
  }
  if (c.step) {
    const auto& s = *c.step;
    out += fmt::format("\ntraining step of {} layer(s): measured {}; fitted model {} ({:+.1f}%); with this profile {} ({:+.1f}%)\n",
                       s.layers, seconds(s.measured_s), seconds(s.model_s), 100 * (s.model_s / s.measured_s - 1),
                       seconds(s.with_profile_s), 100 * (s.with_profile_s / s.measured_s - 1));
    if (s.measured_memory_bytes)
      out += fmt::format("memory: measured {:.2f} GiB (max_memory_allocated); model {:.2f} GiB ({:+.1f}%)\n",
                         *s.measured_memory_bytes / 1073741824.0, s.model_memory_bytes / 1073741824.0,
                         100 * (s.model_memory_bytes / *s.measured_memory_bytes - 1));
    else
      out += "memory: not measured (no CUDA device)\n";
  }
  out += "\n(model: paratune's fitted cost model on one GPU of the cluster, without a profile; the table's "
         "kernels are priced at the measured times when --profile gives this file)\n";
  return out;
}

nlohmann::json comparison_json(const ProfileComparison& c, const HardwareProfile& p) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows)
    rows.push_back({{"kind", r.kind}, {"id", r.id}, {"measured_s", r.measured_s}, {"model_s", r.model_s}});
  nlohmann::json j = {{"profile", p.source}, {"device", p.device}, {"rows", rows}};
  if (c.step) {
    const auto& s = *c.step;
    j["step"] = {{"layers", s.layers},
                 {"measured_s", s.measured_s},
                 {"model_s", s.model_s},
                 {"with_profile_s", s.with_profile_s},
                 {"measured_memory_bytes", s.measured_memory_bytes ? nlohmann::json(*s.measured_memory_bytes) : nullptr},
                 {"model_memory_bytes", s.model_memory_bytes}};
  }
  return j;
}

int run_profile(const SetupFlags& setup, const ProfileFlags& f, bool json) {
  if (!setup.profile.empty())
    throw Error("--profile: `paratune profile` writes a profile (--out FILE); --from FILE compares an existing one");
  const ModelSpec model = load_model(setup.model);
  const ClusterSpec cluster = load_cluster(setup.cluster);
  const TrainingSpec training = training_from(setup);
  check_training_fits_model(model, training);
  const Calibration calibration = calibration_from(setup);
  std::string profile_path = f.from;
  // The calibration is written over the file it names: never over the profile it is fitted to (an
  // hour of measuring lost).
  if (!f.fit_calibration.empty()) {
    const std::string& profile_file = f.from.empty() ? f.out : f.from;
    std::error_code ec;
    if (std::filesystem::weakly_canonical(f.fit_calibration, ec) == std::filesystem::weakly_canonical(profile_file, ec))
      throw Error(fmt::format("--fit-calibration {}: is the profile ({} {}): name another file for the calibration",
                              f.fit_calibration, f.from.empty() ? "--out" : "--from", profile_file));
  }
  if (profile_path.empty()) {
    // Refused before minutes of measuring (an empty --out would also put the plan in ".plan.json").
    if (f.out.empty()) throw Error("--out: an empty path: name the hardware profile to write");
    if (std::filesystem::is_directory(f.out))
      throw Error(fmt::format("--out {}: is a folder: name the profile file to write", f.out));
    ProfilePlanOptions options;
    for (const std::string& text : f.configs.empty() ? std::vector<std::string>{fmt::format("dp={},mbs=1", cluster.num_gpus())} : f.configs)
      options.configs.push_back(config_from(text));
    options.quick = f.quick;
    // A CPU measures one GEMM of Llama 3 8B's widths in about a second: --quick's fewer repetitions
    // keep the whole run near a minute (docs/profile.md).
    options.warmup = f.warmup >= 0 ? f.warmup : f.quick ? kQuickWarmup : options.warmup;
    options.repetitions = f.repetitions >= 0 ? f.repetitions : f.quick ? kQuickRepetitions : options.repetitions;
    const std::string plan_path = f.plan_path.empty() ? default_plan_path(f.out) : f.plan_path;
    nlohmann::ordered_json plan;
    try {
      plan = profile_plan(model, cluster, training, calibration, options);
    } catch (const Error& e) {
      throw e.with_context("--config");
    }
    try {
      write_file(plan_path, plan.dump(2) + "\n");
    } catch (const Error& e) {
      throw e.with_context(f.plan_path.empty() ? "--out (the plan is written beside it)" : "--plan");
    }
    if (f.plan_only) {
      std::cout << "wrote the plan " << plan_path << "; measure it with\n  torchrun --nproc-per-node N -m paratune.profile --plan "
                << plan_path << " --out " << f.out << "\nthen compare: paratune profile ... --from " << f.out << "\n";
      return 0;
    }
    measure(f, plan_path);
    profile_path = f.out;
  }
  HardwareProfile profile;
  try {
    profile = read_hardware_profile(profile_path);
    check_profile_applies(profile, model, cluster, training);
  } catch (const Error& e) {
    throw e.with_context(f.from.empty() ? "the measurer's profile" : "--from");
  }
  const ProfileComparison comparison = compare_profile(profile, model, cluster, training, calibration);
  std::optional<ProfileFit> fit;
  if (!f.fit_calibration.empty()) {
    fit = fit_calibration_to_profile(profile, model, cluster, training, calibration);
    try {
      write_file(f.fit_calibration, to_json(fit->calibration).dump(2) + "\n");
    } catch (const Error& e) {
      throw e.with_context("--fit-calibration");
    }
  }
  if (json) {
    nlohmann::json j = comparison_json(comparison, profile);
    if (fit)
      j["fitted_calibration"] = {{"file", f.fit_calibration},
                                 {"coefficients", fit->parameters},
                                 {"rows", fit->rows},
                                 {"mean_abs_log_error_pct_before", fit->error_before_pct},
                                 {"mean_abs_log_error_pct_after", fit->error_after_pct},
                                 {"at_bounds", to_json(fit->at_bounds)}};
    write_json(j);
  } else {
    std::cout << format_comparison(comparison, profile);
    if (fit) {
      std::cout << fmt::format("\nfitted {} to the {} measured rows: mean |ln(model / measured)| {:.1f}% -> {:.1f}%; wrote {} "
                               "(use it with --calibration)\n",
                               fmt::join(fit->parameters, ", "), fit->rows, fit->error_before_pct, fit->error_after_pct,
                               f.fit_calibration);
      for (const CoefficientAtBound& hit : fit->at_bounds) std::cout << "  " << describe(hit) << "\n";
    }
  }
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, Commands& commands) {
  const auto flags = std::make_shared<SetupCommandFlags<ProfileFlags>>();
  auto* cmd = app.add_subcommand("profile", "measure your GPU on the model's kernels; write a hardware profile for --profile");
  add_setup_flags(cmd, flags->setup);
  ProfileFlags& f = flags->own;
  cmd->add_option("--config", f.configs, "a configuration whose kernels to measure (repeatable; default mbs=1)");
  cmd->add_flag("--quick", f.quick, "a reduced set for a CPU: sequences cut to 256 tokens, a 1-layer step, fewer repetitions");
  cmd->add_option("--warmup", f.warmup, fmt::format("untimed runs before each measurement (default {}; {} with --quick)",
                                                    ProfilePlanOptions{}.warmup, kQuickWarmup))
      ->transform(whole_number(0, 1000));
  cmd->add_option("--repetitions", f.repetitions, fmt::format("timed runs of each measurement (default {}; {} with --quick)",
                                                              ProfilePlanOptions{}.repetitions, kQuickRepetitions))
      ->transform(whole_number(1, 10000));
  cmd->add_option("--nproc", f.nproc, "local processes for the collectives (CPU: Gloo; GPUs: use torchrun and --plan-only)")
      ->capture_default_str()
      ->transform(whole_number(1, 1024));
  cmd->add_option("--out", f.out, "the hardware profile to write")->capture_default_str();
  cmd->add_option("--plan", f.plan_path, "where to write the measurement plan (default: OUT with .plan.json)");
  cmd->add_flag("--plan-only", f.plan_only, "write the plan and stop (measure it under torchrun yourself)");
  cmd->add_option("--from", f.from, "compare an existing profile instead of measuring");
  cmd->add_option("--fit-calibration", f.fit_calibration,
                  "write the calibration whose kernel coefficients are fitted to the profile (for --calibration)");
  cmd->add_option("--python", f.python, "the Python interpreter with PyTorch")->capture_default_str();
  cmd->add_option("--timeout", f.timeout_s, "seconds the measurer may take")
      ->capture_default_str()
      ->transform(real_number(1, 7 * 86400, Ends::kClosed, "seconds"));
  cmd->add_flag("--json", flags->json, "machine-readable output");
  commands.push_back({cmd, [flags] { return run_profile(flags->setup, flags->own, flags->json); }});
}

}  // namespace paratune::cli
