// Flags that take a duration ("10s", "2m", "1h").
#pragma once

#include <string>

namespace paratune::cli {

// The seconds of `text` (units::parse_duration), 0 when it is empty; an error names `flag`.
double optional_duration(const std::string& text, const char* flag);

}  // namespace paratune::cli
