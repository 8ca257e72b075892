// What the commands write: JSON on the standard output, and files (reports, traces, timelines).
#pragma once

#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

namespace paratune::cli {

// JSON output never fails on a string that is not UTF-8 (such a byte is written as U+FFFD): the
// stores hand out printable text, and this keeps any other path from ending in an internal error.
template <typename Json>
void write_json(const Json& j) {
  std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}
inline void write_json(const nlohmann::json& j) { write_json<nlohmann::json>(j); }  // for write_json({...})

// `content` to `path`; throws Error when the file cannot be written whole.
void write_file(const std::string& path, const std::string& content);

}  // namespace paratune::cli
