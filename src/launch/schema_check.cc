// Emitted launches against the frameworks' schemas (paratune/launch/schema_check.h). The schema
// texts are compiled in (cmake/embed_schemas.cmake); rule ids refer to data/frameworks.
#include "paratune/launch/schema_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <set>

#include "paratune/spec/error.h"

namespace paratune::launch {
namespace detail {
std::string framework_schema_text(std::string_view name);  // generated: framework_schemas.cc
}  // namespace detail

namespace {

const char* schema_name(Framework f) {
  switch (f) {
    case Framework::kMegatron: return "megatron-lm";
    case Framework::kTorchtitan: return "torchtitan";
    case Framework::kDeepSpeed: return "deepspeed";
  }
  return "";
}

const nlohmann::json& schema(Framework f) {
  static const std::map<Framework, nlohmann::json> schemas = [] {
    std::map<Framework, nlohmann::json> out;
    for (Framework g : kFrameworks) out[g] = nlohmann::json::parse(detail::framework_schema_text(schema_name(g)));
    return out;
  }();
  return schemas.at(f);
}

bool is_int(std::string_view v) {
  long long x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  return ec == std::errc() && end == v.data() + v.size();
}
bool is_number(std::string_view v) {
  if (v.empty()) return false;
  try {
    std::size_t used = 0;
    (void)std::stod(std::string(v), &used);
    return used == v.size();
  } catch (const std::exception&) {
    return false;
  }
}

// A value against a type and choices given as JSON (numbers or strings).
std::string value_problem(const std::string& what, const std::string& value, const nlohmann::json& type,
                          const nlohmann::json& choices) {
  if (type.is_string()) {
    const std::string t = type.get<std::string>();
    if ((t == "int" || t == "integer") && !is_int(value)) return fmt::format("{}: '{}' is not an integer", what, value);
    if ((t == "float" || t == "float or integer") && !is_number(value))
      return fmt::format("{}: '{}' is not a number", what, value);
  }
  if (choices.is_array() && !choices.empty()) {
    for (const auto& c : choices)
      if ((c.is_string() && c.get<std::string>() == value) || (!c.is_string() && c.dump() == value)) return "";
    return fmt::format("{}: '{}' is not one of {}", what, value, choices.dump());
  }
  return "";
}

}  // namespace

std::vector<std::string> launch_arg_words(const std::string& arg) {
  std::vector<std::string> out;
  std::string word;
  bool quoted = false, any = false;
  for (char c : arg) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) out.push_back(word);
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) out.push_back(word);
  return out;
}

std::vector<std::string> framework_versions(Framework framework) {
  std::vector<std::string> out;
  for (const auto& [version, info] : schema(framework).at("versions").items()) {
    if (info.value("default", false)) out.insert(out.begin(), version);
    else out.push_back(version);
  }
  return out;
}

FrameworkTarget parse_framework_target(std::string_view text) {
  const std::size_t at = text.find('@');
  FrameworkTarget t;
  t.framework = parse_enum<Framework>(text.substr(0, at));
  const std::vector<std::string> versions = framework_versions(t.framework);
  if (at == std::string_view::npos) {
    t.version = versions.front();
    return t;
  }
  t.version = std::string(text.substr(at + 1));
  if (std::find(versions.begin(), versions.end(), t.version) == versions.end())
    throw Error(fmt::format("'{}': paratune has no schema of {} version '{}' (known: {})", text,
                            to_string(t.framework), t.version, fmt::join(versions, ", ")));
  return t;
}

std::vector<Framework> parse_searched_frameworks(std::string_view text) {
  if (text == "any") return {kFrameworks.begin(), kFrameworks.end()};
  if (text == "none") return {};
  try {
    return {parse_framework_target(text).framework};
  } catch (const Error& e) {
    throw Error(fmt::format("'{}' must be any, none or megatron | torchtitan | deepspeed, optionally @VERSION: {}",
                            text, e.what()));
  }
}

std::string to_string(const FrameworkTarget& target) { return to_string(target.framework) + "@" + target.version; }

std::string framework_commit(const FrameworkTarget& target) {
  return schema(target.framework).at("versions").at(target.version).value("commit", "");
}

std::vector<std::string> check_megatron_args(const std::vector<std::string>& args, const std::string& version) {
  const nlohmann::json& s = schema(Framework::kMegatron);
  const nlohmann::json& info = s.at("versions").at(version);
  const std::set<std::string> absent = info.contains("absent") ? info.at("absent").get<std::set<std::string>>()
                                                               : std::set<std::string>{};
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    const std::vector<std::string> w = launch_arg_words(arg);
    if (w.empty()) continue;
    const std::string& flag = w[0];
    const std::vector<std::string> values(w.begin() + 1, w.end());
    const auto it = s.at("flags").find(flag);
    if (it == s.at("flags").end() || absent.contains(flag)) {  // R0.1: unknown flags are fatal
      problems.push_back(fmt::format("{}: not a flag of Megatron-LM {} (R0.1)", flag, version));
      continue;
    }
    if (!seen.insert(flag).second) problems.push_back(fmt::format("{}: given twice", flag));
    const nlohmann::json& o = *it;
    if (o.value("deprecated", false)) problems.push_back(fmt::format("{}: deprecated at {} (R0.6)", flag, version));
    const std::string action = o.at("action").get<std::string>();
    if (action == "store_true" || action == "store_false") {
      if (!values.empty()) problems.push_back(fmt::format("{}: a switch, given the value '{}'", flag, values[0]));
      continue;
    }
    const nlohmann::json& nargs = o.at("nargs");
    const bool many = nargs.is_string() && (nargs == "+" || nargs == "*");
    if (nargs.is_number() && values.size() != nargs.get<std::size_t>())
      problems.push_back(fmt::format("{}: takes {} values, given {}", flag, nargs.get<int>(), values.size()));
    else if (!many && !nargs.is_number() && values.size() != 1)
      problems.push_back(fmt::format("{}: takes one value, given {}", flag, values.size()));
    else if (nargs == "+" && values.empty())
      problems.push_back(fmt::format("{}: takes one or more values (R0.4)", flag));
    for (const std::string& v : values)
      if (std::string p = value_problem(flag, v, o.at("type"), o.at("choices")); !p.empty()) problems.push_back(p);
  }
  return problems;
}

std::vector<std::string> check_torchtitan_toml(const std::string& toml, const std::string& version) {
  const nlohmann::json& keys = schema(Framework::kTorchtitan).at("keys");
  (void)schema(Framework::kTorchtitan).at("versions").at(version);
  std::vector<std::string> problems;
  std::string table;
  std::set<std::string> seen;
  std::size_t start = 0;
  while (start < toml.size()) {
    std::size_t end = toml.find('\n', start);
    if (end == std::string::npos) end = toml.size();
    std::string line = toml.substr(start, end - start);
    start = end + 1;
    if (const std::size_t hash = line.find('#'); hash != std::string::npos && line.find('"') > hash) line.resize(hash);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (line.empty()) continue;
    if (line.front() == '[') {
      table = line.substr(1, line.find(']') - 1);
      continue;
    }
    const std::size_t eq = line.find(" = ");
    if (eq == std::string::npos) {
      problems.push_back(fmt::format("'{}': not 'key = value' (T0)", line));
      continue;
    }
    const std::string key = (table.empty() ? "" : table + ".") + line.substr(0, eq);
    const std::string value = line.substr(eq + 3);
    const auto it = keys.find(key);
    if (it == keys.end()) {  // T0: the loader rejects unknown keys
      problems.push_back(fmt::format("[{}] {}: not a key of torchtitan {} (T0)", table, line.substr(0, eq), version));
      continue;
    }
    if (!seen.insert(key).second) problems.push_back(fmt::format("{}: given twice", key));
    const std::string type = it->at("toml_type").get<std::string>();
    const bool quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
    const bool array = !value.empty() && value.front() == '[';
    std::string wrong;
    if (type == "string" && !quoted) wrong = "a string";
    else if (type == "integer" && !is_int(value)) wrong = "an integer";
    else if ((type == "float" || type == "float or integer") && !is_number(value)) wrong = "a number";
    else if (type == "boolean" && value != "true" && value != "false") wrong = "true or false";
    else if (type.starts_with("array") && !array && !(type.ends_with("comma-separated string") && quoted))
      wrong = type;
    if (!wrong.empty()) {
      problems.push_back(fmt::format("{} = {}: must be {} (T0)", key, value, wrong));
      continue;
    }
    if (quoted)
      if (std::string p = value_problem(key, value.substr(1, value.size() - 2), "string", it->at("choices")); !p.empty())
        problems.push_back(p);
  }
  return problems;
}

std::vector<std::string> check_deepspeed_config(const nlohmann::json& config, const std::string& version) {
  const nlohmann::json& keys = schema(Framework::kDeepSpeed).at("keys");
  (void)schema(Framework::kDeepSpeed).at("versions").at(version);
  std::vector<std::string> problems;
  std::function<void(const nlohmann::json&, const std::string&)> walk = [&](const nlohmann::json& j,
                                                                            const std::string& prefix) {
    for (const auto& [k, v] : j.items()) {
      const std::string key = prefix.empty() ? k : prefix + "." + k;
      const auto it = keys.find(key);
      if (it == keys.end()) {
        problems.push_back(fmt::format("{}: not a ds_config key of DeepSpeed {} (D0)", key, version));
        continue;
      }
      const std::string type = it->at("type").get<std::string>();
      // A free-form dictionary (optimizer.params, scheduler.params: "object", "Dict") holds the
      // named component's own arguments, which ds_config does not list.
      if (type == "object" || type.find("Dict") != std::string::npos) continue;
      if (type == "section" || v.is_object()) {
        if (v.is_object()) walk(v, key);
        continue;
      }
      std::string wrong;
      if (type == "int" && !v.is_number_integer()) wrong = "an integer";
      else if (type == "float" && !v.is_number()) wrong = "a number";
      else if ((type == "bool" || type == "Optional[bool]") && !v.is_boolean()) wrong = "true or false";
      else if (type == "str" && !v.is_string()) wrong = "a string";
      if (!wrong.empty()) problems.push_back(fmt::format("{} = {}: must be {} (D0)", key, v.dump(), wrong));
      const nlohmann::json& choices = it->at("choices");
      if (choices.is_array() && !choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end())
        problems.push_back(fmt::format("{} = {}: not one of {} (D0)", key, v.dump(), choices.dump()));
    }
  };
  walk(config, "");
  return problems;
}

}  // namespace paratune::launch
