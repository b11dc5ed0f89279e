#include "tracefuse/base/interrupt.h"

#include <signal.h>

#include <atomic>

#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

std::atomic<int> received{0};

void OnSignal(int signal) {
  received.store(signal, std::memory_order_relaxed);
  // A second Ctrl-C ends the process at once. SIGTERM stays caught: Slurm may send it twice (the
  // early warning, then the time limit), and the run must still record how it ended.
  if (signal == SIGINT) {
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, nullptr);
  }
}

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a read() blocked on a pipe returns EINTR and polls
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int InterruptSignal() { return received.load(std::memory_order_relaxed); }

absl::Status InterruptedError(std::string_view what) {
  return absl::CancelledError(StrCat("interrupted by ", SignalName(InterruptSignal()), " ", what));
}

std::string SignalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return StrCat("signal ", signal);
  }
}

}  // namespace tracefuse
