#include "tracefuse/report/breakdown.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <vector>

#include "report/formatting.h"
#include "report/py_json_writer.h"
#include "tracefuse/report/stats.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

struct KernelShare {
  uint32_t name;
  uint64_t count;
  int64_t time_ns;
};

struct CategoryBreakdown {
  CategoryId category;
  uint64_t count = 0;
  int64_t time_ns = 0;
  std::vector<KernelShare> top;  // by time, descending
};

// Per category (by time, descending) with its `top` kernels by time; categories without kernels
// are left out.
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

// ByFallbackRule() tells whether name `n` was classified by a fallback (word) rule: users should
// see which kernels rest on that last layer rather than on a rule for their library.
bool ByFallbackRule(const TraceProfile& p, uint32_t n) {
  const std::vector<Rule>& rules = p.classifier->rule_set().rules();
  return p.name_rule[n] < rules.size() && rules[p.name_rule[n]].fallback;
}

// FallbackTotals() counts the kernels, and their time, that fallback rules classified.
CategoryTotals FallbackTotals(const TraceProfile& p) {
  CategoryTotals t;
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    if (!ByFallbackRule(p, n)) continue;
    t.kernels += p.name_kernels[n];
    t.time_ns += p.name_time_ns[n];
  }
  return t;
}

// The rule set's default category: what no rule claimed.
CategoryId UnclassifiedCategory(const TraceProfile& p) {
  return *p.classifier->rule_set().category_index(p.classifier->rule_set().default_rule().category);
}

double Share(int64_t part, int64_t whole) { return whole > 0 ? double(part) / double(whole) : 0.0; }

double AverageMicros(const CategoryBreakdown& c) {
  return MillisAsMicros(c.time_ns) / double(c.count);
}

std::string Shorten(const std::string& s, size_t n) {
  std::string_view p = Utf8Prefix(s, n);
  return p.size() < s.size() ? std::string(p) + "..." : s;
}

void KernelJson(const TraceProfile& p, const KernelShare& k, PyJsonWriter* w) {
  w->BeginObject();
  w->Field("name", p.names[k.name]);
  w->Field("count", k.count);
  w->Field("time_us", MillisAsMicros(k.time_ns));
  w->Field("by_fallback_rule", ByFallbackRule(p, k.name));
  w->EndObject();
}

void CategoryJson(const TraceProfile& p, const CategoryBreakdown& c, int64_t total,
                  PyJsonWriter* w) {
  w->BeginObject();
  w->Field("category", p.category_name(c.category));
  w->Field("count", c.count);
  w->Field("time_us", MillisAsMicros(c.time_ns));
  w->Field("time_share", Share(c.time_ns, total));
  w->Field("avg_us", AverageMicros(c));
  w->Key("top_kernels");
  w->BeginArray();
  for (const KernelShare& k : c.top) KernelJson(p, k, w);
  w->EndArray();
  w->EndObject();
}

}  // namespace

std::string BreakdownJson(const TraceProfile& p, size_t top) {
  const int64_t total = KernelTimeNs(p);
  const std::vector<CategoryBreakdown> cats = Breakdown(p, top);
  std::string out;
  PyJsonWriter w(&out, nullptr);
  w.BeginObject();
  w.Field("trace", p.path);
  w.Field("platform", PlatformName(p.platform));
  w.Field("gpu", p.gpu);
  w.Field("rule_set", p.classifier->rule_set().name());
  w.Field("kernels", p.kernel_count);
  w.Field("kernel_time_us", MillisAsMicros(total));
  WriteTruncation(p, &w);
  const CategoryTotals fallback = FallbackTotals(p);
  w.Field("fallback_rule_kernels", fallback.kernels);
  w.Field("fallback_rule_time_share", Share(fallback.time_ns, total));
  w.Key("categories");
  w.BeginArray();
  for (const CategoryBreakdown& c : cats) CategoryJson(p, c, total, &w);
  w.EndArray();
  w.Key("unclassified");
  w.BeginArray();
  const CategoryId other = UnclassifiedCategory(p);
  for (const CategoryBreakdown& c : cats)
    if (c.category == other)
      for (const KernelShare& k : c.top) KernelJson(p, k, &w);
  w.EndArray();
  w.EndObject();
  out += '\n';
  return out;
}

namespace {

// FallbackNote() says how much rests on fallback rules, when anything does.
std::string FallbackNote(const TraceProfile& p, int64_t total) {
  const CategoryTotals fallback = FallbackTotals(p);
  if (fallback.kernels == 0) return "";
  return fmt::format(
      "\n~ classified by a fallback rule (a word of the name, no rule for its library): {} "
      "kernels, {:.3f} ms, {:.1f}% of kernel time ('tracefuse rules' lists them)\n",
      Thousands(fallback.kernels), Millis(fallback.time_ns), 100 * Share(fallback.time_ns, total));
}

}  // namespace

std::string BreakdownText(const TraceProfile& p, size_t top) {
  const int64_t total = KernelTimeNs(p);
  const std::vector<CategoryBreakdown> cats = Breakdown(p, top);
  std::string out =
      fmt::format("{}: {} [{}], {} kernels, {:.3f} ms kernel time, rule set {}\n\n", p.path,
                  GpuText(p), PlatformName(p.platform), Thousands(p.kernel_count), Millis(total),
                  p.classifier->rule_set().name());
  if (p.truncated) out.insert(out.size() - 1, StrCat("truncated: ", TruncationText(p), "\n"));
  size_t width = 8;
  for (const CategoryBreakdown& c : cats)
    width = std::max(width, p.category_name(c.category).size());
  fmt::format_to(std::back_inserter(out), "  {:<{}}  {:>10}  {:>12}  {:>7}  {:>10}\n", "category",
                 width, "kernels", "time ms", "share", "avg us");
  for (const CategoryBreakdown& c : cats) {
    fmt::format_to(std::back_inserter(out), "  {:<{}}  {:>10}  {:>12.3f}  {:>6.1f}%  {:>10.2f}\n",
                   p.category_name(c.category), width, Thousands(c.count), Millis(c.time_ns),
                   100 * Share(c.time_ns, total), AverageMicros(c));
  }
  const CategoryId other = UnclassifiedCategory(p);
  for (const CategoryBreakdown& c : cats) {
    out += fmt::format("\n{}{}:\n", p.category_name(c.category),
                       c.category == other ? " (unclassified: candidates for a rule file)" : "");
    for (const KernelShare& k : c.top) {
      fmt::format_to(std::back_inserter(out), "  {:>12.3f} ms  {:>8}x  {}{}\n", Millis(k.time_ns),
                     Thousands(k.count), ByFallbackRule(p, k.name) ? "~ " : "",
                     Shorten(p.names[k.name], 120));
    }
  }
  return out + FallbackNote(p, total);
}

std::string BreakdownCsv(const TraceProfile& p, size_t top) {
  const int64_t total = KernelTimeNs(p);
  std::string out = "category,kernel,count,time_us,time_share,by_fallback_rule\n";
  for (const CategoryBreakdown& c : Breakdown(p, top)) {
    const std::string cat = CsvField(p.category_name(c.category));
    out += fmt::format("{},,{},{},{},\n", cat, c.count, MillisAsMicros(c.time_ns),
                       Share(c.time_ns, total));
    for (const KernelShare& k : c.top) {
      out += fmt::format("{},{},{},{},{},{}\n", cat, CsvField(p.names[k.name]), k.count,
                         MillisAsMicros(k.time_ns), Share(k.time_ns, total),
                         ByFallbackRule(p, k.name) ? "true" : "false");
    }
  }
  return out;
}

}  // namespace tracefuse
