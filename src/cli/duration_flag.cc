#include "duration_flag.h"

#include "paratune/spec/error.h"
#include "paratune/spec/units.h"

namespace paratune::cli {

double optional_duration(const std::string& text, const char* flag) {
  if (text.empty()) return 0;
  try {
    return units::parse_duration(text);
  } catch (const Error& e) {
    throw e.with_context(flag);
  }
}

}  // namespace paratune::cli
