// Files and directories the tests make: a fresh directory per test, and whole files written and
// read back.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace paratune::testing {

// TempDir()/GROUP/NAME, absolute, emptied and created.
inline std::filesystem::path fresh_test_dir(const std::string& group, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::absolute(std::filesystem::path(::testing::TempDir()) / group / name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

// The whole file, byte for byte ("" if it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace paratune::testing
