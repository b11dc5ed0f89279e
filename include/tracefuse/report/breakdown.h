// Stage 7, report: `tracefuse breakdown`, where one trace's kernel time goes.
#ifndef TRACEFUSE_REPORT_BREAKDOWN_H_
#define TRACEFUSE_REPORT_BREAKDOWN_H_

#include <cstddef>
#include <string>

#include "tracefuse/reduce.h"

namespace tracefuse {

// BreakdownJson() lists kernel time per category (by time) with the `top` kernels of each, and
// the top unclassified kernels (the rule set's default category) apart, so a user sees what a
// rule file should add.
std::string BreakdownJson(const TraceProfile& profile, size_t top);

// BreakdownText() is BreakdownJson() for people: a table of categories, then each category's
// top kernels.
std::string BreakdownText(const TraceProfile& profile, size_t top);

// BreakdownCsv() has one row per category (empty kernel column) followed by a row per top kernel.
std::string BreakdownCsv(const TraceProfile& profile, size_t top);

// BreakdownHtml() is the breakdown as one self-contained HTML page (no script, no request):
// the categories as bars and a table, each category's top kernels, the unclassified kernels.
std::string BreakdownHtml(const TraceProfile& profile, size_t top);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_BREAKDOWN_H_
