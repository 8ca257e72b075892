// Error messages that name what the user typed: a command or flag the program does not have, and
// the library's option errors in terms of flags.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "paratune/spec/option_error.h"

namespace paratune::cli {

// After a failed parse: the first command word that is no command, or flag the command has not,
// with what it may have meant ("" when neither: CLI11's own message is the better one).
std::string unknown_command_or_flag(const CLI::App& app, int argc, char** argv);

// The library names its options' fields; the user typed flags (option_flags.h): `e` with each field
// named by the flag of the subcommand `app` ran.
std::string option_error_message(const CLI::App& app, const OptionError& e);

}  // namespace paratune::cli
