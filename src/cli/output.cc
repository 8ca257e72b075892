#include "output.h"

#include <fmt/format.h>

#include <fstream>

#include "paratune/spec/error.h"

namespace paratune::cli {

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path);
  out << content;
  out.close();
  if (!out) throw Error(fmt::format("{}: cannot write file", path));
}

}  // namespace paratune::cli
