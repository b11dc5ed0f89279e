#include "report/breakdown/view.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "fmt/format.h"
#include "report/common/formatting.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {

std::vector<CategoryBreakdown> Breakdown(const TraceProfile& p, size_t top) {
  std::vector<CategoryBreakdown> cats(p.category_count());
  for (CategoryId c : CategoryIds(cats.size())) cats[c].category = c;
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    CategoryBreakdown& c = cats[p.category_of_name(n)];
    c.count += p.name_kernels[n];
    c.time_ns += p.name_time_ns[n];
    c.top.push_back({n, p.name_kernels[n], p.name_time_ns[n]});
  }
  std::vector<CategoryBreakdown> out;
  for (CategoryBreakdown& c : cats) {
    if (c.count == 0) continue;
    std::stable_sort(c.top.begin(), c.top.end(), [](const KernelShare& a, const KernelShare& b) {
      return a.time_ns > b.time_ns;
    });
    if (c.top.size() > top) c.top.resize(top);
    out.push_back(std::move(c));
  }
  std::stable_sort(
      out.begin(), out.end(),
      [](const CategoryBreakdown& a, const CategoryBreakdown& b) { return a.time_ns > b.time_ns; });
  return out;
}

bool ByFallbackRule(const TraceProfile& p, uint32_t n) {
  const std::vector<Rule>& rules = p.classifier->rule_set().rules();
  return p.name_rule[n] < rules.size() && rules[p.name_rule[n]].fallback;
}

CategoryTotals FallbackTotals(const TraceProfile& p) {
  CategoryTotals t;
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    if (!ByFallbackRule(p, n)) continue;
    t.kernels += p.name_kernels[n];
    t.time_ns += p.name_time_ns[n];
  }
  return t;
}

bool ByLaunchingOp(const TraceProfile& p, uint32_t n) { return p.by_op.names.contains(n); }

CategoryTotals ByLaunchingOpTotals(const TraceProfile& p) {
  CategoryTotals t;
  for (const auto& [n, found] : p.by_op.names) {
    t.kernels += p.name_kernels[n];
    t.time_ns += p.name_time_ns[n];
  }
  return t;
}

std::string_view ClassificationMark(const TraceProfile& p, uint32_t n) {
  return ByFallbackRule(p, n) ? "~ " : ByLaunchingOp(p, n) ? "* " : "";
}

CategoryId UnclassifiedCategory(const TraceProfile& p) {
  return *p.classifier->rule_set().category_index(p.classifier->rule_set().default_rule().category);
}

double Share(int64_t part, int64_t whole) { return whole > 0 ? double(part) / double(whole) : 0.0; }

std::string FallbackSentence(const TraceProfile& p, int64_t total) {
  const CategoryTotals fallback = FallbackTotals(p);
  if (fallback.kernels == 0) return "";
  return fmt::format(
      "~ classified by a fallback rule (a word of the name, no rule for its library): {} "
      "kernels, {} ms, {:.1f}% of kernel time ('tracefuse rules' lists them)",
      Thousands(fallback.kernels), MillisText(fallback.time_ns),
      100 * Share(fallback.time_ns, total));
}

std::string ByLaunchingOpSentence(const TraceProfile& p, int64_t total) {
  if (p.by_op.state == ByOpClassification::State::kCannotReadTwice) {
    return "Names left in the default category were not classified by their launching ops: the "
           "input, a pipe, cannot be read again for its CPU side (give the file instead)";
  }
  const CategoryTotals by_op = ByLaunchingOpTotals(p);
  if (by_op.kernels == 0) return "";
  return fmt::format(
      "* classified by the op that launched it (its name matches no rule): {} kernels, {} ms, "
      "{:.1f}% of kernel time ('tracefuse breakdown --suggest' proposes rules for their names)",
      Thousands(by_op.kernels), MillisText(by_op.time_ns), 100 * Share(by_op.time_ns, total));
}

double AverageMicros(const CategoryBreakdown& c) {
  return MillisAsMicros(c.time_ns) / double(c.count);
}

std::optional<double> CategoryTflops(const std::vector<CategoryWork>* work, CategoryId category) {
  return work == nullptr ? std::nullopt : (*work)[category].tflops_per_s();
}

}  // namespace tracefuse
