// Internal to the report stage: what the formats of `tracefuse merge` share.
#ifndef TRACEFUSE_SRC_REPORT_MERGE_FORMAT_H_
#define TRACEFUSE_SRC_REPORT_MERGE_FORMAT_H_

#include <string>
#include <string_view>
#include <vector>

#include "tracefuse/report/merge.h"

namespace tracefuse {

// ProblemPairs() is every pair that is not complete: the failed, then the interrupted, the ones
// that never finished and the missing ones, each in pair order.
std::vector<const MergedPair*> ProblemPairs(const MergeSummary& summary);

// MillisOfMicros() is microseconds as the reports print milliseconds: "12.345".
std::string MillisOfMicros(double us);

// TopOpportunityText() is a pair's first opportunity, "GEMM by H100 2.00x", or "none".
std::string TopOpportunityText(const MergedPair& pair);

// Disparity() is how much the sides' kernel times differ, either way: max(t1/t2, t2/t1).
double Disparity(const MergedPair& pair);

// StragglerText() is one straggler in one line: "rank5 (AMD side) computes 1.30x the median
// rank; the other 7 ranks waited 4.200 ms for it in 36 all-reduces", the pair named `label`
// (its label, or the label cut to a column's width).
std::string StragglerText(const MergeSummary& summary, Side side, const Straggler& straggler,
                          std::string_view label);

// NoStragglerText() is a side without one: "NVIDIA side: no straggler among 8 ranks (GPU
// computation 10.000 ms median, 10.500 ms at most)", or why there is nothing to compare.
std::string NoStragglerText(const MergeSummary& summary, Side side);

// SummedMicros() is microseconds summed across devices, ranks or collectives, to the nanosecond
// the status files give: sums of decimal fractions in binary drift in the last digits.
double SummedMicros(double us);

// FusionDifferenceText() is a fusion difference over the pairs in one sentence, its scope cut to
// `scope_width`: "aten::conv2d under ViTModel/.../Conv2d: NVIDIA runs it in fewer kernels (split)
// in 8 pairs, 8 instances; AMD's extra kernels (SubTensorOpWithScalar#d x1) take 32.064 ms".
std::string FusionDifferenceText(const MergeSummary& summary, const OpFusionDifference& d,
                                 size_t scope_width);

// FusedKernelText() names the fusing side's kernel that does the extra kernels' work: "NVIDIA's
// fmhaSm#fKernel_QkvE#m#OBfloat#... does their work", the name cut to `width`; "" where the
// difference names none (relation "algorithm", or no kernel found).
std::string FusedKernelText(const MergeSummary& summary, const OpFusionDifference& d, size_t width);

// LinkedShareText() is the share of a side's kernel time linked to ops over the pairs compared
// --by-op: "AMD 99.9% median, lowest 97.0% (rank-3)".
std::string LinkedShareText(const MergeSummary& summary, Side side);

// FitMiddle() cuts `s` to `width` bytes by eliding its middle (at UTF-8 boundaries) as "...".
std::string FitMiddle(std::string_view s, size_t width);

// ByDisparity() is the complete pairs with a report, those whose kernel time differs most
// between the sides first (ties in pair order).
std::vector<const MergedPair*> ByDisparity(const MergeSummary& summary);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_MERGE_FORMAT_H_
