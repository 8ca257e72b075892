// Tests that need a real server (PostgreSQL, sshd, Slurm) start it themselves; where it cannot
// start they skip with the reason -- unless PARATUNE_REQUIRE_SERVERS=1 (scripts/test.sh, CI), where
// a server that cannot start fails the test: CI must not pass by skipping them.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace paratune::testing {

inline bool servers_required() {
  const char* value = std::getenv("PARATUNE_REQUIRE_SERVERS");
  return value != nullptr && std::string(value) == "1";
}

}  // namespace paratune::testing

// In a test body: skip (or, with PARATUNE_REQUIRE_SERVERS=1, fail) when `reason` is not empty.
#define PARATUNE_NEED_SERVER(reason)                                                                 \
  do {                                                                                               \
    const std::string paratune_server_problem_ = (reason);                                           \
    if (!paratune_server_problem_.empty()) {                                                         \
      if (::paratune::testing::servers_required())                                                   \
        FAIL() << "server needed (PARATUNE_REQUIRE_SERVERS=1): " << paratune_server_problem_;        \
      GTEST_SKIP() << paratune_server_problem_;                                                      \
    }                                                                                                \
  } while (false)
