// Library tracefuse_base: the exit codes of `tracefuse`, shared by the command line and by the
// batch library, which records each pair's exit code in its status file.
//
// 0 success; 1 malformed or unsupported trace (or rule file failing --check, or a merged batch
// with pairs not complete); 2 usage error (bad flags, unknown rule set); 3 I/O error (missing
// file, directory, unreadable); 143 / 130 stopped by SIGTERM / SIGINT (see
// tracefuse/base/interrupt.h).
#ifndef TRACEFUSE_BASE_EXIT_CODE_H_
#define TRACEFUSE_BASE_EXIT_CODE_H_

#include "absl/status/status.h"

namespace tracefuse {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadTrace = 1;
inline constexpr int kExitIncomplete = 1;  // merge: some pair of the batch is not complete
inline constexpr int kExitUsage = 2;
inline constexpr int kExitIo = 3;
// A run stopped by SIGTERM or SIGINT exits with this plus the signal's number: 143, 130.
inline constexpr int kExitSignalBase = 128;

// ExitCodeFor() maps a status to the exit code documented above.
int ExitCodeFor(const absl::Status& s);

// ExitCodeFor(s, code) is `code` for a failure whose kind the caller knows (a rule set that does
// not load is a usage error, a report that cannot be written an I/O error), except that an
// interruption keeps its signal's exit code.
int ExitCodeFor(const absl::Status& s, int code);

}  // namespace tracefuse

#endif  // TRACEFUSE_BASE_EXIT_CODE_H_
