#include "output.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "paratune/spec/error.h"

namespace paratune::cli {

void write_file(const std::string& path, const std::string& content) {
  errno = 0;
  std::ofstream out(path);
  const int open_error = out ? 0 : errno;  // why: no such folder, a folder of that name, no permission
  out << content;
  out.close();
  if (!out)
    throw Error(fmt::format("{}: cannot write file{}", path,
                            open_error ? fmt::format(" ({})", std::strerror(open_error)) : ""));
}

}  // namespace paratune::cli
