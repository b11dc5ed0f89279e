// Library tracefuse_base: where and when a run happens, for the records that say so (batch's
// status files, the classification benchmark's report), and the thread CPU clock.
#ifndef TRACEFUSE_BASE_HOST_H_
#define TRACEFUSE_BASE_HOST_H_

#include <string>

namespace tracefuse {

// HostName() is gethostname(), "" when it fails.
std::string HostName();

// ThreadCpuSeconds() is the CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): the
// pipeline's per-stage accounting adds up differences of it.
double ThreadCpuSeconds();

// UtcNow() is the current time, UTC, in ISO 8601 to the second ("2025-01-31T12:34:56Z").
std::string UtcNow();

}  // namespace tracefuse

#endif  // TRACEFUSE_BASE_HOST_H_
