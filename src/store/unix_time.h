// The stores' clock: seconds since the Unix epoch, as stored in *_unix_s columns.
#pragma once

#include <chrono>

namespace paratune::store {

inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace paratune::store
