// Library tracefuse_base: SIGTERM and SIGINT as a request to stop.
//
// Slurm sends SIGTERM at a job's time limit and SIGKILL `KillWait` seconds later; a user sends
// SIGINT with Ctrl-C. The handler only records the signal. Readers poll InterruptSignal() before
// each block (at most a few milliseconds apart) and fail with InterruptedError(), so a run ends
// through its ordinary error path: outputs not committed are removed, one line says what
// happened, and the command exits with 128 + the signal's number (143, 130).
#ifndef TRACEFUSE_BASE_INTERRUPT_H_
#define TRACEFUSE_BASE_INTERRUPT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tracefuse {

// InstallInterruptHandlers() makes SIGTERM and SIGINT set InterruptSignal(). A second SIGINT ends
// the process at once (the default action), for a user who will not wait; SIGTERM, which Slurm
// may send twice, is only ever recorded.
void InstallInterruptHandlers();

// InterruptSignal() is the signal received since InstallInterruptHandlers(), 0 when none.
int InterruptSignal();

// InterruptedError() is the Cancelled status of a run stopped by InterruptSignal(): "interrupted
// by SIGTERM after 1234 bytes of t.json" for `what` = "after 1234 bytes of t.json".
absl::Status InterruptedError(std::string_view what);

// SignalName() is "SIGTERM", "SIGINT", or "signal N".
std::string SignalName(int signal);

}  // namespace tracefuse

#endif  // TRACEFUSE_BASE_INTERRUPT_H_
