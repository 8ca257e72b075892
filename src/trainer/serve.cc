#include "serve.h"

#include <fmt/format.h>
#include <poll.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "comm.h"
#include "data.h"
#include "paratune/spec/error.h"
#include "paratune/train/options.h"
#include "paratune/trial/protocol.h"
#include "trainer.h"

namespace paratune::train {
namespace serving {

void say(const nlohmann::json& line) {
  std::printf("@paratune %s\n", line.dump().c_str());
  std::fflush(stdout);
}

// The default generator's state as it was (what a checkpoint's "random_state" restores).
void restore_random_state(const torch::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to the default one
  generator.set_state(state);
}

// Lines from stdin: waiting for the next assignment, or looking between steps for a cancel.
class StdinLines {
 public:
  // The next line; nullopt when none came within `timeout_ms` (-1: wait) or at end-of-file (eof()).
  std::optional<std::string> next(int timeout_ms) {
    for (;;) {
      if (const std::size_t newline = pending_.find('\n'); newline != std::string::npos) {
        std::string line = pending_.substr(0, newline);
        pending_.erase(0, newline + 1);
        return line;
      }
      if (eof_) return std::nullopt;
      pollfd fd{0, POLLIN, 0};
      const int ready = ::poll(&fd, 1, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return std::nullopt;
      char buffer[4096];
      const ssize_t n = ::read(0, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      pending_.append(buffer, static_cast<std::size_t>(n));
    }
  }
  [[nodiscard]] bool eof() const { return eof_ && pending_.find('\n') == std::string::npos; }

 private:
  std::string pending_;
  bool eof_ = false;
};

// A trial this process trains or keeps: its options, its one-rank communicator, its model.
struct Trial {
  std::unique_ptr<TrainOptions> options;
  std::unique_ptr<Comm> comm;
  std::unique_ptr<RankTrainerHandle> trainer;
  torch::Tensor random_state;  // the default generator's, when it was paused (a checkpoint keeps it too)
};

class Server {
 public:
  Server(std::vector<std::string> args, int memory_mib)
      : args_(std::move(args)), budget_bytes_(static_cast<std::size_t>(memory_mib) << 20) {}

  int run() {
    say({{"serve", trial::kServeVersion}});
    for (;;) {
      const std::optional<std::string> line = input_.next(-1);
      if (!line) return 0;  // end-of-file: paratune is done with this process
      const nlohmann::json message = nlohmann::json::parse(*line, nullptr, false);
      if (message.is_object() && message.contains("stop")) return 0;
      if (message.is_object() && message.contains("cancel")) continue;  // of a trial that has ended
      if (!message.is_object() || !message.contains("trial") || !message["trial"].is_string() ||
          !message.contains("env") || !message["env"].is_object()) {
        std::fprintf(stderr, "paratune-train: serve: ignored a line that is no assignment: %.200s\n", line->c_str());
        continue;
      }
      if (!assignment(message)) return 0;
    }
  }

 private:
  // Trains one assignment and ends it with its done line; false when paratune said stop meanwhile.
  bool assignment(const nlohmann::json& message) {
    const std::string id = message["trial"].get<std::string>();
    const std::int64_t steps_done = message.value("steps_done", std::int64_t{0});
    auto env = [&](const char* name) {
      const auto it = message["env"].find(name);
      return it != message["env"].end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    bool stop_after = false, was_cancelled = false;
    const auto cancelled = [&] {
      while (const std::optional<std::string> line = input_.next(0)) {
        const nlohmann::json m = nlohmann::json::parse(*line, nullptr, false);
        if (m.is_object() && m.contains("cancel") && m["cancel"] == id) was_cancelled = true;
        if (m.is_object() && m.contains("stop")) stop_after = true;
      }
      stop_after = stop_after || input_.eof();
      return was_cancelled || stop_after;
    };
    nlohmann::json done{{"done", id}};
    try {
      Trial trial = take(id, steps_done, env("PARATUNE_PARAMS"), env("PARATUNE_MAX_STEPS"),
                         env("PARATUNE_CHECKPOINT_DIR"));
      std::int64_t first = steps_done;
      if (trial.random_state.defined()) {  // kept here: from memory
        restore_random_state(trial.random_state);
        std::printf("paratune-train: resumed %s from memory after step %lld\n", id.c_str(),
                    static_cast<long long>(steps_done - 1));
      } else {
        first = trial.options->resume ? trial.trainer->resume() : 0;
      }
      const bool keep = !trial.options->checkpoint_dir.empty();
      const int code = trial.trainer->run_from(first, cancelled, keep);
      if (code != 0) done["failed"] = fmt::format("training stopped with exit code {} (see the log)", code);
      if (code == 0 && keep && !trial.trainer->finished() && !was_cancelled && !stop_after) pause(id, std::move(trial));
    } catch (const Error& e) {
      std::fprintf(stderr, "paratune-train: error: %s\n", e.what());
      done["failed"] = e.what();
    } catch (const std::exception& e) {  // std::bad_alloc among them: stderr says so, paratune reads it as OOM
      std::fprintf(stderr, "paratune-train: failed: %s\n", e.what());
      done["failed"] = e.what();
    }
    std::fflush(stderr);
    say(done);
    return !stop_after;
  }

  // The assignment's trial: the kept one if it paused after steps_done steps, else a new one (that
  // resumes from its checkpoint directory when steps_done > 0, as a process would).
  Trial take(const std::string& id, std::int64_t steps_done, const std::string& params, const std::string& max_steps,
             const std::string& checkpoint_dir) {
    std::optional<Trial> kept;
    if (const auto it = std::find_if(kept_.begin(), kept_.end(), [&](const auto& k) { return k.first == id; });
        it != kept_.end()) {
      if (steps_done > 0 && it->second.trainer->last_step() + 1 == steps_done) kept = std::move(it->second);
      kept_.erase(it);  // older than this assignment otherwise: never used again
    }
    if (params.find_first_not_of(" \t\n") != std::string::npos && params[params.find_first_not_of(" \t\n")] == '[')
      throw Error("a serving paratune-train trains one trial at a time, not a fused group (PARATUNE_PARAMS an array)");
    auto options = std::make_unique<TrainOptions>(read_train_options(args_, params, max_steps));
    resolve(*options);
    if (options->ranks != 1)
      throw Error(fmt::format("ranks: value {}: a serving paratune-train trains one-rank trials; run this study "
                              "without serve",
                              options->ranks));
    if (!checkpoint_dir.empty() && options->checkpoint_dir.empty()) {
      options->checkpoint_dir = checkpoint_dir;
      options->resume = true;
    }
    if (options->threads == 0) options->threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    torch::set_num_threads(options->threads);
    reset_peak_rss();
    if (kept) {  // the kept model trains on: this assignment's step budget and checkpoint directory
      *kept->options = *options;
      return std::move(*kept);
    }
    Trial trial;
    trial.options = std::move(options);
    trial.comm = std::make_unique<Comm>();
    trial.trainer = std::make_unique<RankTrainerHandle>(*trial.options, *trial.comm, data_for(*trial.options));
    return trial;
  }

  // The data, loaded once per identity (the data options of the trials served so far).
  std::shared_ptr<TrainingData> data_for(const TrainOptions& o) {
    const std::string identity = data_identity(o);
    if (const auto it = data_.find(identity); it != data_.end()) return it->second;
    std::shared_ptr<TrainingData> loaded = load_training_data(o);
    std::printf("paratune-train: serve: loaded %s\n", loaded->describe().c_str());
    data_.emplace(identity, loaded);
    return loaded;
  }

  // Keeps a trial that paused at a rung; beyond the budget the oldest kept are saved and dropped.
  void pause(const std::string& id, Trial trial) {
    trial.random_state = at::detail::getDefaultCPUGenerator().get_state();
    kept_.emplace_back(id, std::move(trial));
    std::size_t bytes = 0;
    for (const auto& [kept_id, kept] : kept_) bytes += kept.trainer->state_bytes();
    while (bytes > budget_bytes_ && !kept_.empty()) {
      auto& [oldest_id, oldest] = kept_.front();
      // Its checkpoint holds the generator as it was when it paused.
      restore_random_state(oldest.random_state);
      oldest.trainer->spill();
      std::printf("paratune-train: serve: saved %s to %s (kept trials above --serve-memory)\n", oldest_id.c_str(),
                  oldest.options->checkpoint_dir.c_str());
      bytes -= oldest.trainer->state_bytes();
      kept_.pop_front();
    }
    std::fflush(stdout);
  }

  std::vector<std::string> args_;
  std::size_t budget_bytes_;
  StdinLines input_;
  std::map<std::string, std::shared_ptr<TrainingData>> data_;
  std::list<std::pair<std::string, Trial>> kept_;  // oldest first
};

}  // namespace serving

int serve_trials(const std::vector<std::string>& args, int memory_mib) {
  serving::Server server(args, memory_mib);
  return server.run();
}

}  // namespace paratune::train
