#include "tracefuse/base/exit_code.h"

#include "tracefuse/base/interrupt.h"

namespace tracefuse {

int ExitCodeFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnimplemented:
      return kExitBadTrace;
    case absl::StatusCode::kCancelled:
      return kExitSignalBase + InterruptSignal();
    default:
      return kExitIo;
  }
}

int ExitCodeFor(const absl::Status& s, int code) {
  if (s.ok()) return kExitOk;
  return s.code() == absl::StatusCode::kCancelled ? ExitCodeFor(s) : code;
}

}  // namespace tracefuse
