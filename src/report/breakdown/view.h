// Internal to the report stage: where one trace's kernel time goes, computed once here for every
// format of `tracefuse breakdown` and for compare's per-category drill-down in HTML.
#ifndef TRACEFUSE_SRC_REPORT_BREAKDOWN_VIEW_H_
#define TRACEFUSE_SRC_REPORT_BREAKDOWN_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracefuse/analyze/op_work.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// KernelShare is one kernel name's kernels and time.
struct KernelShare {
  uint32_t name;  // index into TraceProfile::names
  uint64_t count;
  int64_t time_ns;
};

// CategoryBreakdown is one category's kernels and time with its top kernels.
struct CategoryBreakdown {
  CategoryId category;
  uint64_t count = 0;
  int64_t time_ns = 0;
  std::vector<KernelShare> top;  // by time, descending
};

// Breakdown() is, per category with kernels (by time, descending), its `top` kernels by time.
std::vector<CategoryBreakdown> Breakdown(const TraceProfile& profile, size_t top);

// ByFallbackRule() tells whether name `name` was classified by a fallback (word) rule: users
// should see which kernels rest on that last layer rather than on a rule for their library.
bool ByFallbackRule(const TraceProfile& profile, uint32_t name);

// FallbackTotals() counts the kernels, and their time, that fallback rules classified.
CategoryTotals FallbackTotals(const TraceProfile& profile);

// ByLaunchingOp() tells whether name `name` was classified by the op that launched its kernels
// (TraceProfile::by_op): its name matches no rule.
bool ByLaunchingOp(const TraceProfile& profile, uint32_t name);

// ByLaunchingOpTotals() counts the kernels, and their time, classified by their launching op.
CategoryTotals ByLaunchingOpTotals(const TraceProfile& profile);

// ClassificationMark() is the mark a name's row carries: "~ " for a fallback rule, "* " for its
// launching op, "" for a rule for its library.
std::string_view ClassificationMark(const TraceProfile& profile, uint32_t name);

// UnclassifiedCategory() is the rule set's default category: what no rule claimed.
CategoryId UnclassifiedCategory(const TraceProfile& profile);

// Share() is part / whole, 0 when whole is 0.
double Share(int64_t part, int64_t whole);

// FallbackSentence() says how much of the kernel time (`total`) rests on fallback rules: "~
// classified by a fallback rule ...", or "" when nothing does.
std::string FallbackSentence(const TraceProfile& profile, int64_t total);

// ByLaunchingOpSentence() says how much of the kernel time rests on launching ops ("* classified
// by the op that launched it ..."), or, when names were left in the default category that could
// not be classified so, why; "" otherwise.
std::string ByLaunchingOpSentence(const TraceProfile& profile, int64_t total);

// AverageMicros() is the category's mean kernel duration in microseconds.
double AverageMicros(const CategoryBreakdown& category);

// CategoryTflops() is the TFLOP/s of the FLOPs `work` credits to `category`; nullopt without
// `work` or without FLOPs.
std::optional<double> CategoryTflops(const std::vector<CategoryWork>* work, CategoryId category);

// kTflopsNote says what a category's TFLOP/s is, under the tables that show it.
inline constexpr const char* kTflopsNote =
    "TFLOP/s: the FLOPs of the ops whose kernel time is mostly in the category (perf models, "
    "docs/perf-models.md), over that time";

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_BREAKDOWN_VIEW_H_
