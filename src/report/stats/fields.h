// Internal to the report stage: what the formats of `tracefuse stats` name alike.
#ifndef TRACEFUSE_SRC_REPORT_STATS_FIELDS_H_
#define TRACEFUSE_SRC_REPORT_STATS_FIELDS_H_

#include <string>

#include "tracefuse/report/stats.h"

namespace tracefuse {

// The name `stats` gives events without a "cat".
inline std::string EventCategoryName(const std::string& cat) {
  return cat.empty() ? "(none)" : cat;
}

inline double GbPerSecond(const TraceProfile& p, double elapsed) {
  return elapsed > 0 ? static_cast<double>(p.input_bytes) / 1e9 / elapsed : 0.0;
}

inline const char* CpuSidePathName(CpuSidePath path) {
  switch (path) {
    case CpuSidePath::kNotRead:
      return "not read";
    case CpuSidePath::kStreamed:
      return "streamed";
    case CpuSidePath::kAnyOrder:
      return "any-order";
  }
  return "";
}

// HeldBytes() calls f(name, bytes) for each structure of `held`, then for the total.
template <typename F>
void ForEachHeld(const CpuSideBytes& held, F&& f) {
  f("units", held.units);
  f("correlation_index", held.correlation_index);
  f("nesting", held.nesting);
  f("collected_events", held.collected_events);
  f("names", held.names);
  f("work", held.work);
  f("total", held.total());
}

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_STATS_FIELDS_H_
