// paratune-train: a libtorch trainer for trials (docs/paratune-train.md). As a launcher it starts
// and supervises the trial's rank processes; as a rank (PARATUNE_TRAIN_RANK set) it trains its part.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "comm.h"
#include "coord_check.h"
#include "fused_trainer.h"
#include "models.h"
#include "paratune/spec/error.h"
#include "paratune/train/launcher.h"
#include "paratune/train/options.h"
#include "profile.h"
#include "serve.h"
#include "trainer.h"

namespace {

using namespace paratune;
using namespace paratune::train;

constexpr const char* kStoreVariable = "PARATUNE_TRAIN_STORE";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void usage() {
  std::printf(
      "usage: paratune-train [--option value | --option=value]...\n"
      "Trains a model on real data and reports through paratune's trial protocol. Options may also come\n"
      "from PARATUNE_PARAMS (a JSON object; the command line overrides it); PARATUNE_MAX_STEPS caps the steps;\n"
      "PARATUNE_CHECKPOINT_DIR (without --checkpoint-dir) is where it saves after its last step and resumes from.\n"
      "--profile instead measures the model's layers, optimizer step and collectives with --ranks ranks busy\n"
      "and prints them as one line, \"@profile {json}\" (what paratune tune --strategy auto decides from).\n"
      "--coord-check instead trains one process for --steps steps at the constant --lr and prints each layer's\n"
      "mean |output| at each step, \"@coord {json}\" (mup's coordinate check: flat across widths under muP).\n"
      "PARATUNE_PARAMS holding a JSON array trains a fused group: one model per object (options that differ only\n"
      "in lr, momentum, betas, eps, weight decay, schedule, init scale, clip norm), as one fused model in this\n"
      "process; each protocol line names its \"member\".\n"
      "PARATUNE_SERVE=1 serves one-rank trials (paratune tune --serve): it loads the data once and trains each\n"
      "assignment read from stdin, keeping paused trials in memory up to --serve-memory MiB.\n\n"
      "  option              default        rule\n%s",
      train_options_help().c_str());
}

// The launcher: the model and its split are checked here once, before any rank starts.
int launch(const TrainOptions& o, const std::vector<std::string>& args) {
  (void)stage_layers_for(o, build_model(o).unit_flops());
  const int local = o.ranks / o.nnodes;
  std::vector<std::pair<std::string, std::string>> environment;
  // The file store's directory, removed however the launch ends.
  struct StoreDirectory {
    std::filesystem::path path;
    ~StoreDirectory() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove_all(path, ignored);
    }
  } store_dir;
  if (o.master_addr.empty()) {
    std::string base = env("PARATUNE_TRIAL_DIR");
    if (base.empty()) base = std::filesystem::temp_directory_path().string();
    std::string pattern = (std::filesystem::path(base) / "paratune-train-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw Error(fmt::format("{}: cannot create the rendezvous directory", base));
    store_dir.path = pattern;
    environment.emplace_back(kStoreVariable, (store_dir.path / "store").string());
  }
  const RankFailure failure =
      run_ranks(std::filesystem::read_symlink("/proc/self/exe").string(), args, o.node_rank * local, local, environment);
  if (failure.ok()) return 0;
  if (failure.rank < 0) {
    std::fprintf(stderr, "paratune-train: stopped: %s\n", failure.reason.c_str());
    return failure.exit_code;
  }
  std::fprintf(stderr, "paratune-train: rank %d %s; the other ranks were stopped and the trial failed\n", failure.rank,
               failure.reason.c_str());
  return failure.exit_code;
}

int rank_main(const TrainOptions& o, bool profile) {
  const std::string rank_text = env(kRankVariable);
  const int rank = rank_text.empty() ? o.node_rank * (o.ranks / o.nnodes) : std::stoi(rank_text);
  if (o.ranks == 1) {
    Comm comm;
    return profile ? profile_rank(o, comm) : train_rank(o, comm);
  }
  Comm comm(o, rank, env(kStoreVariable));
  return profile ? profile_rank(o, comm) : train_rank(o, comm);
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    }
  // --profile and --coord-check are modes, not training options: the ranks get them too (the
  // launcher passes `args`).
  std::vector<std::string> options_args;
  bool profile = false, coord_check = false;
  for (const auto& a : args) {
    if (a == "--profile") profile = true;
    else if (a == "--coord-check") coord_check = true;
    else options_args.push_back(a);
  }
  const std::string rank = env(kRankVariable);
  const std::string who = rank.empty() ? "paratune-train" : "paratune-train rank " + rank;
  try {
    // A JSON array in PARATUNE_PARAMS: a fused group of trials, one process (fused_trainer.h).
    const std::string params = env("PARATUNE_PARAMS");
    if (params.find_first_not_of(" \t\n") != std::string::npos && params[params.find_first_not_of(" \t\n")] == '[') {
      if (profile || coord_check) throw Error("--profile and --coord-check measure one model, not a fused group");
      std::vector<TrainOptions> members = parse_fused_members(options_args, params, env("PARATUNE_MAX_STEPS"));
      const int threads = members.front().threads > 0 ? members.front().threads
                                                      : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
      for (TrainOptions& m : members) m.threads = threads;
      return train_fused(members);
    }
    TrainOptions o = read_train_options(options_args, params, env("PARATUNE_MAX_STEPS"));
    if (profile && o.ranks > 1) {
      // Ranks 0 and 1 must be neighbouring stages (the point-to-point times): every rank a stage,
      // or, with fewer layer units than ranks, pairs of stages; with an odd count of ranks that
      // exceeds the units, replicas only (no pipeline can use those ranks; nothing sent).
      const int units = static_cast<int>(build_model(o).units.size());
      o.strategy = units >= o.ranks ? Strategy::kMp : o.ranks % 2 == 0 ? Strategy::kDpGpipe : Strategy::kDp;
      o.pp = o.strategy == Strategy::kMp ? o.ranks : o.strategy == Strategy::kDpGpipe ? 2 : 1;
      o.dp = o.ranks / o.pp;
      o.micro_batches = 1;
      o.stage_layers.clear();
    }
    resolve(o);
    if (coord_check) {
      if (profile || o.ranks > 1 || o.steps < 1 || o.steps > 10000)
        throw Error("--coord-check: one process (ranks 1, not with --profile) and --steps in [1, 10000]");
      if (o.threads == 0) o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
      torch::set_num_threads(o.threads);
      std::fputs(coordinate_lines(coordinate_check(o, static_cast<int>(o.steps))).c_str(), stdout);
      return 0;
    }
    // A tuner that pauses and promotes trials (ASHA) gives each trial a checkpoint directory: save
    // there after the last step, and resume from it when run again.
    if (const std::string dir = env("PARATUNE_CHECKPOINT_DIR"); !dir.empty() && o.checkpoint_dir.empty()) {
      o.checkpoint_dir = dir;
      o.resume = true;
    }
    const int local = o.ranks / o.nnodes;
    // Serving (serve.h): one-rank trials, assignments on stdin. A first trial of several ranks runs
    // as a process of its own (no {"serve": 1}), which paratune takes as a program that does not serve.
    if (env("PARATUNE_SERVE") == "1" && rank.empty() && !profile && o.ranks == 1)
      return serve_trials(options_args, o.serve_memory);
    if (o.threads == 0) o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
    if (rank.empty() && local > 1) return launch(o, args);
    return rank_main(o, profile);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", who.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: failed: %s\n", who.c_str(), e.what());
    return 1;
  }
}
