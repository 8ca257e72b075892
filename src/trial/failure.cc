// Failure kinds (trial/failure.h).
#include "paratune/trial/failure.h"

#include <array>

namespace paratune::trial {
namespace {
constexpr std::array<const char*, 6> kKindNames{"none", "refused", "oom", "over-memory", "crashed", "timeout"};
}  // namespace

const char* to_string(FailureKind kind) { return kKindNames[static_cast<std::size_t>(kind)]; }

FailureKind classify_failure(TrialStatus status, int exit_code, int exit_signal, long long steps) {
  switch (status) {
    case TrialStatus::kCompleted:
    case TrialStatus::kEarlyStopped:
    case TrialStatus::kInterrupted: return FailureKind::kNone;
    case TrialStatus::kOom: return FailureKind::kOom;
    case TrialStatus::kInfeasible: return FailureKind::kOverMemory;
    case TrialStatus::kTimeout: return FailureKind::kTimeout;
    case TrialStatus::kFailed: break;
  }
  const bool exited_with_error = exit_signal == 0 && exit_code > 0;
  return exited_with_error && steps == 0 ? FailureKind::kRefused : FailureKind::kCrashed;
}

}  // namespace paratune::trial
