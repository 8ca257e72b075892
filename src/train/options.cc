#include "paratune/train/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

template <typename E>
struct Named {
  const char* name;
  E value;
};
constexpr std::array<Named<Workload>, 3> kWorkloads{{{"mlp", Workload::kMlp}, {"cnn", Workload::kCnn}, {"gpt", Workload::kGpt}}};
constexpr std::array<Named<Optimizer>, 3> kOptimizers{
    {{"sgd", Optimizer::kSgd}, {"adam", Optimizer::kAdam}, {"adamw", Optimizer::kAdamW}}};
constexpr std::array<Named<Schedule>, 3> kSchedules{
    {{"constant", Schedule::kConstant}, {"step", Schedule::kStep}, {"cosine", Schedule::kCosine}}};
constexpr std::array<Named<Strategy>, 5> kStrategies{{{"none", Strategy::kNone},
                                                      {"dp", Strategy::kDp},
                                                      {"mp", Strategy::kMp},
                                                      {"gpipe", Strategy::kGpipe},
                                                      {"dp+gpipe", Strategy::kDpGpipe}}};
constexpr std::array<Named<Parametrization>, 2> kParametrizations{
    {{"sp", Parametrization::kStandard}, {"mup", Parametrization::kMup}}};

template <typename E, std::size_t N>
const char* name_of(const std::array<Named<E>, N>& table, E value) {
  for (const auto& n : table)
    if (n.value == value) return n.name;
  return "?";
}

// One option: its name, the rule its value must follow (shown in errors and --help), and how a
// text value is stored. `set` throws Error with the rule when the value breaks it.
struct OptionSpec {
  const char* name;
  const char* rule;
  std::function<void(TrainOptions&, const std::string&)> set;
  std::function<std::string(const TrainOptions&)> show;
};

[[noreturn]] void broken(const char* rule) { throw Error(rule); }

double parse_double(const std::string& text, const char* rule) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) broken(rule);
  return v;
}

std::int64_t parse_int(const std::string& text, const char* rule) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) broken(rule);  // out of range included: never wrapped
  return v;
}

OptionSpec real(const char* name, double TrainOptions::*field, double low, bool low_open, double high, bool high_open,
                const char* rule) {
  return {name, rule,
          [=](TrainOptions& o, const std::string& text) {
            const double v = parse_double(text, rule);
            if (v < low || (low_open && v == low) || v > high || (high_open && v == high)) broken(rule);
            o.*field = v;
          },
          [=](const TrainOptions& o) { return fmt::format("{}", o.*field); }};
}

template <typename I>
OptionSpec integer(const char* name, I TrainOptions::*field, std::int64_t low, std::int64_t high, const char* rule) {
  return {name, rule,
          [=](TrainOptions& o, const std::string& text) {
            const std::int64_t v = parse_int(text, rule);
            if (v < low || v > high) broken(rule);
            o.*field = static_cast<I>(v);
          },
          [=](const TrainOptions& o) { return fmt::format("{}", o.*field); }};
}

template <typename E, std::size_t N>
OptionSpec choice(const char* name, E TrainOptions::*field, const std::array<Named<E>, N>& table) {
  static const std::string rule = [&] {
    std::string r = "one of";
    for (const auto& n : table) r += fmt::format(" {}", n.name);
    return r;
  }();
  return {name, rule.c_str(),
          [=, &table](TrainOptions& o, const std::string& text) {
            for (const auto& n : table)
              if (text == n.name) {
                o.*field = n.value;
                return;
              }
            broken(rule.c_str());
          },
          [=, &table](const TrainOptions& o) { return std::string(name_of(table, o.*field)); }};
}

OptionSpec flag(const char* name, bool TrainOptions::*field) {
  static constexpr const char* kRule = "true or false (also on/off, 1/0)";
  return {name, kRule,
          [=](TrainOptions& o, const std::string& text) {
            if (text == "true" || text == "on" || text == "1") o.*field = true;
            else if (text == "false" || text == "off" || text == "0") o.*field = false;
            else broken(kRule);
          },
          [=](const TrainOptions& o) { return std::string(o.*field ? "true" : "false"); }};
}

OptionSpec text(const char* name, std::string TrainOptions::*field, const char* rule) {
  return {name, rule, [=](TrainOptions& o, const std::string& v) { o.*field = v; },
          [=](const TrainOptions& o) { return (o.*field).empty() ? std::string("(none)") : o.*field; }};
}

// A comma-separated list of integers in [low, high], `empty_ok`: "" is an empty list.
OptionSpec int_list(const char* name, std::vector<int> TrainOptions::*field, int low, int high, bool empty_ok,
                    const char* rule) {
  return {name, rule,
          [=](TrainOptions& o, const std::string& text) {
            std::vector<int> values;
            if (text.empty()) {
              if (!empty_ok) broken(rule);
            } else {
              std::stringstream in(text);
              std::string item;
              while (std::getline(in, item, ',')) {
                const std::int64_t v = parse_int(item, rule);
                if (v < low || v > high) broken(rule);
                values.push_back(static_cast<int>(v));
              }
              if (text.back() == ',') broken(rule);
            }
            o.*field = std::move(values);
          },
          [=](const TrainOptions& o) {
            std::string s;
            for (int v : o.*field) s += (s.empty() ? "" : ",") + std::to_string(v);
            return s.empty() ? std::string("(none)") : s;
          }};
}

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = {
      choice("model", &TrainOptions::model, kWorkloads),
      text("data", &TrainOptions::data, "a Fashion-MNIST directory (mlp, cnn) or a text file or directory (gpt)"),
      integer("val_size", &TrainOptions::val_size, 1, 59999, "an integer in [1, 59999]"),
      integer("eval_every", &TrainOptions::eval_every, 0, kIntMax, "an integer >= 0 (0: at the end only)"),
      integer("eval_batch", &TrainOptions::eval_batch, 0, 1 << 20, "an integer in [0, 1048576] (0: batch_size)"),
      integer("eval_limit", &TrainOptions::eval_limit, 0, kIntMax, "an integer >= 0 (0: every sample)"),
      flag("eval_test", &TrainOptions::eval_test),
      real("lr", &TrainOptions::lr, 0, true, 10, false, "a number in (0, 10]"),
      choice("optimizer", &TrainOptions::optimizer, kOptimizers),
      real("momentum", &TrainOptions::momentum, 0, false, 1, true, "a number in [0, 1)"),
      real("beta1", &TrainOptions::beta1, 0, false, 1, true, "a number in [0, 1)"),
      real("beta2", &TrainOptions::beta2, 0, false, 1, true, "a number in [0, 1)"),
      real("eps", &TrainOptions::eps, 0, true, 1, false, "a number in (0, 1]"),
      real("weight_decay", &TrainOptions::weight_decay, 0, false, 1, false, "a number in [0, 1]"),
      integer("batch_size", &TrainOptions::batch_size, 1, 1 << 20, "an integer in [1, 1048576]"),
      integer("warmup_steps", &TrainOptions::warmup_steps, 0, kIntMax, "an integer >= 0"),
      choice("schedule", &TrainOptions::schedule, kSchedules),
      integer("step_size", &TrainOptions::step_size, 1, kIntMax, "an integer >= 1"),
      real("step_epochs", &TrainOptions::step_epochs, 0, true, 1e6, false, "a number in (0, 1e6]"),
      real("gamma", &TrainOptions::gamma, 0, true, 1, false, "a number in (0, 1]"),
      real("min_lr_ratio", &TrainOptions::min_lr_ratio, 0, false, 1, false, "a number in [0, 1]"),
      real("dropout", &TrainOptions::dropout, 0, false, 1, true, "a number in [0, 1)"),
      real("init_scale", &TrainOptions::init_scale, 0, true, 100, false, "a number in (0, 100]"),
      real("clip_norm", &TrainOptions::clip_norm, 0, false, kInf, true, "a number >= 0 (0: no clipping)"),
      real("epochs", &TrainOptions::epochs, 0, true, 1e6, false, "a number in (0, 1e6]"),
      integer("steps", &TrainOptions::steps, 1, std::int64_t{1} << 40, "an integer in [1, 2^40]"),
      integer("seed", &TrainOptions::seed, 0, std::numeric_limits<std::int64_t>::max(), "an integer >= 0"),
      int_list("mlp_hidden", &TrainOptions::mlp_hidden, 1, 1 << 16, true,
               "comma-separated widths in [1, 65536] (empty: a linear model)"),
      int_list("cnn_channels", &TrainOptions::cnn_channels, 1, 4096, false,
               "comma-separated channel counts in [1, 4096], at least one"),
      integer("layers", &TrainOptions::layers, 1, 1024, "an integer in [1, 1024]"),
      integer("d_model", &TrainOptions::d_model, 1, 65536, "an integer in [1, 65536]"),
      integer("heads", &TrainOptions::heads, 1, 1024, "an integer in [1, 1024]"),
      integer("seq_len", &TrainOptions::seq_len, 1, 1 << 16, "an integer in [1, 65536]"),
      integer("mlp_ratio", &TrainOptions::mlp_ratio, 1, 64, "an integer in [1, 64]"),
      flag("tied_embeddings", &TrainOptions::tied_embeddings),
      choice("parametrization", &TrainOptions::parametrization, kParametrizations),
      real("surrogate_ratio", &TrainOptions::surrogate_ratio, 1, false, 4096, false,
           "a number in [1, 4096] dividing every width into a whole number"),
      choice("strategy", &TrainOptions::strategy, kStrategies),
      integer("ranks", &TrainOptions::ranks, 1, 4096, "an integer in [1, 4096]"),
      integer("dp", &TrainOptions::dp, 1, 4096, "an integer in [1, 4096]"),
      integer("pp", &TrainOptions::pp, 1, 4096, "an integer in [1, 4096]"),
      integer("micro_batches", &TrainOptions::micro_batches, 1, 1 << 20, "an integer in [1, 1048576]"),
      int_list("stage_layers", &TrainOptions::stage_layers, 1, 1 << 16, false,
               "comma-separated layer counts >= 1, one per pipeline stage"),
      real("bucket_mb", &TrainOptions::bucket_mb, 0, true, 1 << 20, false, "a number of MB in (0, 1048576]"),
      flag("overlap", &TrainOptions::overlap),
      integer("threads", &TrainOptions::threads, 0, 4096, "an integer in [0, 4096] (0: cores / ranks)"),
      text("master_addr", &TrainOptions::master_addr, "a host name or address (rendezvous over TCP)"),
      integer("master_port", &TrainOptions::master_port, 1, 65535, "a port in [1, 65535]"),
      text("checkpoint_dir", &TrainOptions::checkpoint_dir, "a directory for each rank's checkpoint file"),
      integer("checkpoint_every", &TrainOptions::checkpoint_every, 0, kIntMax,
              "an integer >= 0 (0: after the last step only)"),
      flag("resume", &TrainOptions::resume),
      integer("serve_memory", &TrainOptions::serve_memory, 0, 1 << 20,
              "MiB in [0, 1048576] of paused trials a serving process keeps in memory (0: it saves each)"),
      integer("nnodes", &TrainOptions::nnodes, 1, 4096, "an integer in [1, 4096]"),
      integer("node_rank", &TrainOptions::node_rank, 0, 4095, "an integer in [0, 4095]"),
  };
  return table;
}

const OptionSpec& find_option(const std::string& given, const std::string& source) {
  std::string name = given;
  for (char& c : name)
    if (c == '-') c = '_';
  for (const auto& spec : option_table())
    if (name == spec.name) return spec;
  std::vector<std::string> names;
  for (const auto& spec : option_table()) names.emplace_back(spec.name);
  throw Error(fmt::format("{}: {}", source, unknown_name_message("option", name, names)));
}

void set_option(TrainOptions& options, std::set<std::string>& given, const std::string& name,
                const std::string& value, const std::string& source) {
  const OptionSpec& spec = find_option(name, source);
  try {
    spec.set(options, value);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}: value '{}' must be {}", source, spec.name, value, e.what()));
  }
  given.insert(spec.name);
}

// A PARATUNE_PARAMS value as the text the command line would carry.
std::string json_value_text(const nlohmann::json& value, const std::string& key) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer() || value.is_number_unsigned()) return value.dump();
  if (value.is_number_float()) {
    const double v = value.get<double>();
    // An integral float (2.0 from a YAML space) is an integer option's value too.
    if (std::floor(v) == v && std::abs(v) < 9e15) return fmt::format("{}", static_cast<std::int64_t>(v));
    return fmt::format("{}", v);
  }
  if (value.is_array()) {
    std::string s;
    for (const auto& item : value) {
      if (!item.is_number_integer()) throw Error(fmt::format("PARATUNE_PARAMS: {}: a list must hold integers", key));
      s += (s.empty() ? "" : ",") + item.dump();
    }
    return s;
  }
  throw Error(fmt::format("PARATUNE_PARAMS: {}: value {} is not a number, string, boolean or list of integers", key,
                          value.dump()));
}

}  // namespace

const char* to_string(Workload v) { return name_of(kWorkloads, v); }
const char* to_string(Optimizer v) { return name_of(kOptimizers, v); }
const char* to_string(Schedule v) { return name_of(kSchedules, v); }
const char* to_string(Strategy v) { return name_of(kStrategies, v); }
const char* to_string(Parametrization v) { return name_of(kParametrizations, v); }

TrainOptions parse_train_options(const std::vector<std::string>& args, const std::string& params_json,
                                 const std::string& max_steps_env) {
  TrainOptions options = read_train_options(args, params_json, max_steps_env);
  resolve(options);
  return options;
}

TrainOptions read_train_options(const std::vector<std::string>& args, const std::string& params_json,
                                const std::string& max_steps_env) {
  TrainOptions options;
  std::set<std::string> given;
  if (!params_json.empty()) {
    nlohmann::json params;
    try {
      params = nlohmann::json::parse(params_json);
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("PARATUNE_PARAMS: not valid JSON ({})", e.what()));
    }
    if (!params.is_object()) throw Error("PARATUNE_PARAMS: must be a JSON object of option names and values");
    for (const auto& [key, value] : params.items())
      set_option(options, given, key, json_value_text(value, key), "PARATUNE_PARAMS");
  }
  std::set<std::string> given_here;  // an option twice on the command line is a mistake, not an override
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw Error(fmt::format("argument '{}': expected --option value or --option=value", arg));
    std::string name = arg.substr(2), value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else {
      if (i + 1 >= args.size()) throw Error(fmt::format("argument '{}': missing its value", arg));
      value = args[++i];
    }
    const std::string canonical = find_option(name, "argument '" + arg + "'").name;
    if (!given_here.insert(canonical).second)
      throw Error(fmt::format("argument '--{}': given more than once", name));
    set_option(options, given, name, value, "--" + name);
  }
  if (given.contains("epochs") && given.contains("steps"))
    throw Error("epochs and steps: give one training length, not both");
  if (!given.contains("epochs") && !given.contains("steps")) options.epochs = 1;
  if (given.contains("step_size") && given.contains("step_epochs"))
    throw Error("step_size and step_epochs: give one interval between decays, in steps or in epochs");
  if (!max_steps_env.empty()) {
    try {
      options.max_steps = parse_int(max_steps_env, "an integer >= 1");
      if (options.max_steps < 1) broken("an integer >= 1");
    } catch (const Error& e) {
      throw Error(fmt::format("PARATUNE_MAX_STEPS: value '{}' must be {}", max_steps_env, e.what()));
    }
  }
  return options;
}

void resolve(TrainOptions& o) {
  const Strategy s = o.strategy;
  const char* name = to_string(s);
  auto require = [&](bool ok, const std::string& message) {
    if (!ok) throw Error(message);
  };
  switch (s) {
    case Strategy::kNone:
      require(o.ranks == 1, fmt::format("ranks: value {} with strategy none: none runs one process (ranks 1)", o.ranks));
      require(o.dp <= 1 && o.pp <= 1, "dp, pp: strategy none has one replica and one stage (use dp, mp, gpipe)");
      o.dp = o.pp = 1;
      break;
    case Strategy::kDp:
      require(o.pp <= 1, fmt::format("pp: value {} with strategy dp: dp keeps the whole model on each rank", o.pp));
      require(o.dp == 0 || o.dp == o.ranks,
              fmt::format("dp: value {} with strategy dp must equal ranks ({})", o.dp, o.ranks));
      o.dp = o.ranks, o.pp = 1;
      break;
    case Strategy::kMp:
    case Strategy::kGpipe:
      require(o.dp <= 1, fmt::format("dp: value {} with strategy {}: use dp+gpipe for replicas", o.dp, name));
      require(o.pp == 0 || o.pp == o.ranks,
              fmt::format("pp: value {} with strategy {} must equal ranks ({})", o.pp, name, o.ranks));
      o.dp = 1, o.pp = o.ranks;
      break;
    case Strategy::kDpGpipe:
      if (o.dp == 0 && o.pp == 0)
        throw Error("dp, pp: strategy dp+gpipe needs --dp or --pp (ranks = dp x pp)");
      if (o.dp == 0) {
        require(o.ranks % o.pp == 0, fmt::format("pp: value {} does not divide ranks ({})", o.pp, o.ranks));
        o.dp = o.ranks / o.pp;
      }
      if (o.pp == 0) {
        require(o.ranks % o.dp == 0, fmt::format("dp: value {} does not divide ranks ({})", o.dp, o.ranks));
        o.pp = o.ranks / o.dp;
      }
      require(o.dp * o.pp == o.ranks,
              fmt::format("dp, pp: dp x pp = {} x {} must equal ranks ({})", o.dp, o.pp, o.ranks));
      break;
  }
  if (o.eval_batch == 0) o.eval_batch = o.batch_size;  // evaluation never needs more memory than training
  const bool pipelined = s == Strategy::kGpipe || s == Strategy::kDpGpipe;
  if (o.micro_batches == 0) o.micro_batches = pipelined ? 2 * o.pp : 1;
  require(pipelined || o.micro_batches == 1,
          fmt::format("micro_batches: value {} with strategy {}: only gpipe and dp+gpipe split a batch into "
                      "micro-batches",
                      o.micro_batches, name));
  require(o.batch_size % o.dp == 0,
          fmt::format("batch_size: value {} must divide into dp = {} replicas evenly", o.batch_size, o.dp));
  require(o.batch_size / o.dp % o.micro_batches == 0,
          fmt::format("batch_size: value {} must divide into dp x micro_batches = {} x {} equal micro-batches",
                      o.batch_size, o.dp, o.micro_batches));
  require(o.stage_layers.empty() || static_cast<int>(o.stage_layers.size()) == o.pp,
          fmt::format("stage_layers: {} stages given for pp = {}", o.stage_layers.size(), o.pp));
  require(o.nnodes <= o.ranks && o.ranks % o.nnodes == 0,
          fmt::format("nnodes: value {} must divide ranks ({})", o.nnodes, o.ranks));
  require(o.node_rank < o.nnodes, fmt::format("node_rank: value {} must be < nnodes ({})", o.node_rank, o.nnodes));
  require(o.nnodes == 1 || !o.master_addr.empty(), "master_addr: several hosts (nnodes > 1) rendezvous over TCP");
  if (o.model == Workload::kGpt)
    require(o.d_model % o.heads == 0,
            fmt::format("heads: value {} must divide d_model ({})", o.heads, o.d_model));
  if (o.surrogate_ratio != 1) {
    // Only the widths the model uses must divide: a CNN's unused mlp_hidden does not matter.
    auto check = [&](const char* name, int width) {
      const double narrowed_width = width / o.surrogate_ratio;
      require(narrowed_width >= 1 && narrowed_width == std::floor(narrowed_width),
              fmt::format("surrogate_ratio: value {} must divide {} ({}) into a whole number >= 1", o.surrogate_ratio,
                          name, width));
    };
    switch (o.model) {
      case Workload::kMlp:
        for (int w : o.mlp_hidden) check("mlp_hidden", w);
        break;
      case Workload::kCnn:
        for (int c : o.cnn_channels) check("cnn_channels", c);
        break;
      case Workload::kGpt: {
        check("d_model", o.d_model);
        if (surrogate_divides_heads(o)) break;  // fewer heads of the same size
        const int d = static_cast<int>(o.d_model / o.surrogate_ratio);
        require(d % o.heads == 0, fmt::format("surrogate_ratio: value {} leaves d_model {} / {} = {}, which heads ({}) "
                                              "must divide (a ratio that does not divide the heads keeps them, each "
                                              "narrower)",
                                              o.surrogate_ratio, o.d_model, o.surrogate_ratio, d, o.heads));
        break;
      }
    }
  }
  require(o.schedule != Schedule::kStep || o.step_size >= 1, "step_size: must be >= 1");
  require(!o.resume || !o.checkpoint_dir.empty(), "resume: needs --checkpoint-dir (where the checkpoint is)");
  require(o.checkpoint_every == 0 || !o.checkpoint_dir.empty(), "checkpoint_every: needs --checkpoint-dir");
}

const std::vector<std::string>& fusable_options() {
  static const std::vector<std::string> names{"lr",         "momentum",    "beta1", "beta2",        "eps",
                                              "weight_decay", "warmup_steps", "schedule", "step_size", "step_epochs",
                                              "gamma",      "min_lr_ratio", "init_scale", "clip_norm"};
  return names;
}

std::vector<TrainOptions> parse_fused_members(const std::vector<std::string>& args, const std::string& params_array,
                                              const std::string& max_steps_env) {
  nlohmann::json members;
  try {
    members = nlohmann::json::parse(params_array);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("PARATUNE_PARAMS: not valid JSON ({})", e.what()));
  }
  if (!members.is_array() || members.size() < 2)
    throw Error("PARATUNE_PARAMS: a fused group is a JSON array of at least 2 objects, one per trial");
  // The command line overrides PARATUNE_PARAMS: a member's option also given there would be
  // overridden for every member, silently making them alike.
  std::set<std::string> on_command_line;
  for (const std::string& arg : args)
    if (arg.rfind("--", 0) == 0 && arg.size() > 2)
      on_command_line.insert(find_option(arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos
                                                                                            : arg.find('=') - 2),
                                         "argument '" + arg + "'")
                                 .name);
  std::vector<TrainOptions> out;
  for (std::size_t b = 0; b < members.size(); ++b) {
    if (!members[b].is_object())
      throw Error(fmt::format("PARATUNE_PARAMS[{}]: must be a JSON object of option names and values", b));
    for (const auto& [key, value] : members[b].items())
      if (on_command_line.contains(find_option(key, fmt::format("PARATUNE_PARAMS[{}]", b)).name))
        throw Error(fmt::format("PARATUNE_PARAMS[{}]: {}: also on the command line, which would set it for every "
                                "member of the fused group",
                                b, key));
    try {
      out.push_back(read_train_options(args, members[b].dump(), max_steps_env));
    } catch (const Error& e) {
      throw Error(fmt::format("PARATUNE_PARAMS[{}]: {}", b, e.what()));
    }
  }
  const TrainOptions& first = out.front();
  if (first.ranks != 1 || first.strategy != Strategy::kNone)
    throw Error(fmt::format("strategy: value {} with ranks {}: a fused group trains in one process (strategy none)",
                            to_string(first.strategy), first.ranks));
  if (!first.checkpoint_dir.empty()) throw Error("checkpoint_dir: fused groups do not checkpoint");
  const std::vector<std::string>& fusable = fusable_options();
  for (std::size_t b = 1; b < out.size(); ++b)
    for (const OptionSpec& spec : option_table()) {
      if (std::find(fusable.begin(), fusable.end(), spec.name) != fusable.end()) continue;
      if (spec.show(out[b]) != spec.show(first))
        throw Error(fmt::format("PARATUNE_PARAMS[{}]: {}: value {} differs from member 0's {}: fused trials differ "
                                "only in the fusable options ({})",
                                b, spec.name, spec.show(out[b]), spec.show(first), fmt::join(fusable, ", ")));
    }
  for (std::size_t b = 0; b < out.size(); ++b) {
    try {
      resolve(out[b]);
    } catch (const Error& e) {
      throw Error(fmt::format("PARATUNE_PARAMS[{}]: {}", b, e.what()));
    }
  }
  return out;
}

bool surrogate_divides_heads(const TrainOptions& o) {
  const double heads = o.heads / o.surrogate_ratio;
  return heads >= 1 && heads == std::floor(heads);
}

TrainOptions narrowed(const TrainOptions& o) {
  TrainOptions n = o;
  auto divide = [&](int width) { return static_cast<int>(std::lround(width / o.surrogate_ratio)); };
  for (int& w : n.mlp_hidden) w = divide(w);
  for (int& c : n.cnn_channels) c = divide(c);
  n.d_model = divide(o.d_model);
  if (o.model == Workload::kGpt && surrogate_divides_heads(o)) n.heads = divide(o.heads);
  n.surrogate_ratio = 1;
  return n;
}

std::string train_options_help() {
  const TrainOptions defaults;
  std::string out;
  for (const auto& spec : option_table()) {
    std::string flag_name = spec.name;
    for (char& c : flag_name)
      if (c == '_') c = '-';
    out += fmt::format("  --{:<17} {:<14} {}\n", flag_name, spec.show(defaults), spec.rule);
  }
  return out;
}

}  // namespace paratune::train
