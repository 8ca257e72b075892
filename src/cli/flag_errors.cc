#include "flag_errors.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "option_flags.h"
#include "paratune/spec/error.h"

namespace paratune::cli {

std::string unknown_command_or_flag(const CLI::App& app, int argc, char** argv) {
  const auto subcommands_of = [](const CLI::App& parent) {
    return parent.get_subcommands([](const CLI::App*) { return true; });
  };
  const CLI::App* command = &app;
  std::string path;  // the command words so far: "plan", "study show"
  int i = 1;
  // The command words: `plan`, `study show`.
  for (; i < argc && argv[i][0] != '-'; ++i) {
    const std::vector<const CLI::App*> subs = subcommands_of(*command);
    if (subs.empty()) break;  // a positional argument of the command
    const CLI::App* sub = nullptr;
    std::vector<std::string> names;
    for (const CLI::App* candidate : subs) {
      names.push_back(candidate->get_name());
      if (candidate->get_name() == argv[i]) sub = candidate;
    }
    if (sub == nullptr)
      return fmt::format("{}{}", path.empty() ? "" : path + ": ", unknown_name_message("command", argv[i], names));
    command = sub;
    path += (path.empty() ? "" : " ") + command->get_name();
  }
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--") || arg == "--") continue;
    const std::string flag(arg.substr(0, arg.find('=')));
    if (command->get_option_no_throw(flag) != nullptr || flag == "--help") continue;
    std::vector<std::string> flags;
    for (const CLI::Option* o : command->get_options())
      for (const std::string& long_name : o->get_lnames()) flags.push_back("--" + long_name);
    const std::string suggestion = closest_match(flag, flags);
    return fmt::format("{}unknown flag '{}'{}; `paratune{} --help` lists them", path.empty() ? "" : path + ": ", flag,
                       suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                       path.empty() ? "" : " " + path);
  }
  return "";
}

std::string option_error_message(const CLI::App& app, const OptionError& e) {
  const CLI::App* command = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
  const auto option = [&](std::string_view flag) { return command->get_option_no_throw(std::string(flag)); };
  return e.render([&](std::string_view field) {
    return cli::flag_for(
        command->get_name(), field, [&](std::string_view flag) { return option(flag) != nullptr; },
        [&](std::string_view flag) { return option(flag) != nullptr && option(flag)->count() > 0; });
  });
}

}  // namespace paratune::cli
