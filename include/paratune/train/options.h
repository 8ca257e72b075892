// paratune-train's options: the workload, its hyperparameters and the parallel strategy of a trial,
// from command-line arguments and PARATUNE_PARAMS (the trial protocol, docs/trial-protocol.md).
//
// Every option has one name, written `--batch-size` on the command line and `batch_size` (or
// `batch-size`) as a PARATUNE_PARAMS key. PARATUNE_PARAMS is read first, then the arguments, so an
// argument overrides the environment. An unknown name, a value of the wrong type, a value outside
// its range, or options that contradict each other are an Error naming the source, the option, the
// value and the rule: never a silent default. Options not given take the defaults listed by
// `paratune-train --help` (train_options_help()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paratune::train {

enum class Workload { kMlp, kCnn, kGpt };
enum class Optimizer { kSgd, kAdam, kAdamW };
enum class Schedule { kConstant, kStep, kCosine };
enum class Strategy { kNone, kDp, kMp, kGpipe, kDpGpipe };
enum class Parametrization { kStandard, kMup };

struct TrainOptions {
  // Workload and data.
  Workload model = Workload::kMlp;
  std::string data;          // Fashion-MNIST directory (mlp, cnn) or text corpus file/directory (gpt); "" = Debian's
  int val_size = 5000;       // Fashion-MNIST training images held out for validation (chosen by seed)
  int eval_every = 0;        // evaluate every this many steps (0: at the end only)
  int eval_batch = 0;        // samples per evaluation forward pass (0: the training batch size)
  int eval_limit = 0;        // at most this many validation/test samples per evaluation (0: all)
  bool eval_test = false;    // score the test split at every evaluation, not only after the last step

  // Hyperparameters.
  double lr = 1e-3;
  Optimizer optimizer = Optimizer::kAdamW;
  double momentum = 0.9;     // sgd
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw
  double weight_decay = 0;
  int batch_size = 64;       // global: samples (sequences) per optimizer step, over all replicas
  int warmup_steps = 0;      // linear warm-up from lr/warmup_steps to lr
  Schedule schedule = Schedule::kConstant;
  int step_size = 1000;      // schedule=step: multiply the rate by gamma every step_size steps ...
  double step_epochs = 0;    // ... or every step_epochs epochs (PyTorch's StepLR stepped per epoch); 0: unset
  double gamma = 0.1;
  double min_lr_ratio = 0;   // schedule=cosine: the rate decays to lr x this
  double dropout = 0;
  double init_scale = 1;     // multiplies every weight's initial standard deviation
  double clip_norm = 0;      // clip the global gradient norm to this (0: no clipping)
  double epochs = 0;         // training length in passes over the training data ...
  std::int64_t steps = 0;    // ... or in optimizer steps (exactly one of them; neither: 1 epoch)
  std::uint64_t seed = 0;

  // Model shapes.
  std::vector<int> mlp_hidden{256, 128};
  std::vector<int> cnn_channels{16, 32, 64};  // one residual block each; stride 2 where channels grow
  int layers = 4, d_model = 128, heads = 4, seq_len = 128;
  int mlp_ratio = 4;
  bool tied_embeddings = true;

  // Parametrization and width (train/mup.h). The shapes above are the base model; surrogate_ratio S
  // trains it with every width (mlp_hidden, cnn_channels, d_model) divided by S (Hydro's surrogate),
  // and muP scales initialization, rates and multipliers against the base.
  Parametrization parametrization = Parametrization::kStandard;
  double surrogate_ratio = 1;

  // Parallel strategy of the trial.
  Strategy strategy = Strategy::kNone;
  int ranks = 1;             // processes in the trial (dp x pp)
  int dp = 0, pp = 0;        // 0: derived from the strategy and ranks
  int micro_batches = 0;     // gpipe: 0 = 2 x pp; none/dp/mp: 1
  std::vector<int> stage_layers;  // layers per pipeline stage; empty: paratune's stage assignment
  double bucket_mb = 25;     // dp: gradient all-reduce bucket size (PyTorch DDP's default)
  bool overlap = true;       // dp: all-reduce a bucket while the backward pass goes on
  int threads = 0;           // intra-op threads per rank (0: cores / ranks on this host, at least 1)
  std::string master_addr;   // rendezvous over TCP at this host (else a file store on this host)
  int master_port = 29500;
  int nnodes = 1, node_rank = 0;  // several hosts: each runs ranks / nnodes of the ranks

  // Checkpoints: each rank's stage (weights, BatchNorm statistics, optimizer state, random state and
  // the step) in checkpoint_dir/rank-R.pt, every checkpoint_every steps and after the last one.
  std::string checkpoint_dir;  // "" = no checkpoints
  int checkpoint_every = 0;    // 0: after the last step only
  bool resume = false;         // continue from checkpoint_dir's checkpoint when there is one

  std::int64_t max_steps = 0;  // PARATUNE_MAX_STEPS: stop after this many steps (0: no limit)

  // Serving (PARATUNE_SERVE=1, src/trainer/serve.h): the paused trials a serving process keeps in
  // memory, in MiB of weights, gradients and optimizer state; beyond it the oldest are saved to
  // their checkpoint directories and dropped.
  int serve_memory = 1024;
};

// Parses `args` (without the program name) after `params_json` (PARATUNE_PARAMS; "" = none) and
// `max_steps_env` (PARATUNE_MAX_STEPS; "" = none), then checks the options together (resolve).
// Throws Error.
TrainOptions parse_train_options(const std::vector<std::string>& args, const std::string& params_json,
                                 const std::string& max_steps_env);

// parse_train_options without resolve(): what the user gave, dp, pp and micro_batches still 0 where
// not given (paratune's --strategy auto resolves it once per candidate strategy).
TrainOptions read_train_options(const std::vector<std::string>& args, const std::string& params_json,
                                const std::string& max_steps_env);

// Fills dp, pp and micro_batches from the strategy and checks what depends on several options
// (ranks = dp x pp, the batch splitting into replicas and micro-batches, heads dividing d_model,
// the stage layers' count). Throws Error.
void resolve(TrainOptions& options);

// The model's shapes with every width divided by surrogate_ratio (what is built and trained;
// surrogate_ratio 1 in the result). resolve() has checked each quotient is whole. The GPT's heads
// are divided too where the ratio divides them, each keeping its dimension; otherwise they are kept,
// each narrower (surrogate_divides_heads).
TrainOptions narrowed(const TrainOptions& options);

// Whether surrogate_ratio divides the GPT's heads into a whole number >= 1. Why fewer heads of the
// same size: muP's 1/d_head attention scale is then SP's 1/sqrt(d_head) at every width, and the
// initialization scale tuned on the surrogate transfers. Measured (bench/results/hydro/
// init_scale_transfer.md): with 4 heads kept, a 4x narrower GPT (heads of 16 against 64) ranked init
// scale 1 best where its target ranked 2; with 1 head of 64 it ranked 2 best, as the target.
bool surrogate_divides_heads(const TrainOptions& options);

// Inter-trial fusion (fused_models.h): the options a fused group's members may differ in -- the
// optimizer's hyperparameters, the schedule and the initialization scale; everything else (model,
// widths, batch, data, seed, steps, parametrization) they share.
const std::vector<std::string>& fusable_options();

// PARATUNE_PARAMS as a JSON array: one member of a fused group per object, each read as
// parse_train_options reads a trial's PARATUNE_PARAMS with the same arguments. Throws Error naming
// the member when it differs from member 0 in an option that is not fusable, and when the group
// asks for what fusion does not do (several ranks, checkpoints, fewer than 2 members).
std::vector<TrainOptions> parse_fused_members(const std::vector<std::string>& args, const std::string& params_array,
                                              const std::string& max_steps_env);

// The option table as help text: name, default, rule.
std::string train_options_help();

const char* to_string(Workload);
const char* to_string(Optimizer);
const char* to_string(Schedule);
const char* to_string(Strategy);
const char* to_string(Parametrization);

}  // namespace paratune::train
