// Stage 7, report: `tracefuse breakdown`, where one trace's kernel time goes.
#ifndef TRACEFUSE_REPORT_BREAKDOWN_H_
#define TRACEFUSE_REPORT_BREAKDOWN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "tracefuse/analyze/op_work.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// Each format takes `work`, with `--by-op`: the FLOPs the perf models credit to each category
// (CategoryWorkOf(), docs/perf-models.md), which adds the categories' achieved TFLOP/s; nullptr
// without.

// BreakdownJson() lists kernel time per category (by time) with the `top` kernels of each, and
// the top unclassified kernels (the rule set's default category) apart, so a user sees what a
// rule file should add.
std::string BreakdownJson(const TraceProfile& profile, size_t top,
                          const std::vector<CategoryWork>* work = nullptr);

// BreakdownText() is BreakdownJson() for people: a table of categories, then each category's
// top kernels.
std::string BreakdownText(const TraceProfile& profile, size_t top,
                          const std::vector<CategoryWork>* work = nullptr);

// BreakdownCsv() has one row per category (empty kernel column) followed by a row per top kernel.
std::string BreakdownCsv(const TraceProfile& profile, size_t top,
                         const std::vector<CategoryWork>* work = nullptr);

// BreakdownHtml() is the breakdown as one self-contained HTML page (no script, no request):
// the categories as bars and a table, each category's top kernels, the unclassified kernels.
std::string BreakdownHtml(const TraceProfile& profile, size_t top,
                          const std::vector<CategoryWork>* work = nullptr);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_BREAKDOWN_H_
