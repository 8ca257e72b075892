// The tests' main: every test process gets a temporary directory of its own.
//
// ctest runs each test as its own process, several at once (-j), and two checkouts may run their
// suites side by side; tests that wrote to fixed paths under /tmp collided. Here TMPDIR and
// TEST_TMPDIR (what std::filesystem::temp_directory_path() and ::testing::TempDir() read) point
// into a fresh mkdtemp directory, which is removed when every test passed (kept for a look when
// one failed). Child processes -- paratune, trial programs -- inherit it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  std::string pattern = (std::filesystem::temp_directory_path() / "paratune-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  ::setenv("TMPDIR", pattern.c_str(), 1);
  ::setenv("TEST_TMPDIR", (pattern + "/").c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (result == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(pattern, ignored);
  }
  return result;
}
