// TraceFormat: what wrote a trace file. Part of the parse stage (importer.h reads the formats
// other than Kineto's).
#ifndef TRACEFUSE_PARSE_TRACE_FORMAT_H_
#define TRACEFUSE_PARSE_TRACE_FORMAT_H_

#include <cstdint>
#include <string_view>

namespace tracefuse {

enum class TraceFormat : uint8_t {
  kKineto,         // the PyTorch profiler's Chrome trace JSON
  kNsysSqlite,     // `nsys export --type sqlite`
  kRocprofv3Json,  // `rocprofv3 --output-format json`
  kRocpdSqlite,    // rocprofv3's rocpd database (its default output since ROCm 7)
};

// TraceFormatName() is how reports name a format: "Kineto JSON", "Nsight Systems SQLite",
// "rocprofv3 JSON", "rocpd SQLite".
std::string_view TraceFormatName(TraceFormat format);

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_TRACE_FORMAT_H_
