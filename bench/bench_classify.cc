// Classification throughput, names per second and bytes per second:
//   Hyperscan  - the Classifier on every distinct name, no cache (what a first sight costs);
//   Cached     - lookups in a per-thread name cache, as the pipeline does for repeated names;
//   Baseline   - the same rules evaluated one by one with substring search (std::string::find
//                on a lowercased copy, as the Python reference does; std::regex for the one
//                regex of the tracefuse set), in the same run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

#include "bench_input.h"
#include "tracefuse/classify.h"
#include "tracefuse/strings.h"

namespace tracefuse::bench {
namespace {

const std::vector<std::string>& Names() {
  static const std::vector<std::string> names = KernelNames();
  return names;
}

size_t TotalBytes(const std::vector<std::string>& names) {
  size_t n = 0;
  for (const auto& s : names) n += s.size();
  return n;
}

std::shared_ptr<const Classifier> Load(const char* set) {
  return *Classifier::Create(*RuleSet::Load(set));
}

void Report(benchmark::State& state, const std::vector<std::string>& names) {
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(names.size()));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(TotalBytes(names)));
}

void BM_Hyperscan(benchmark::State& state, const char* set) {
  auto c = Load(set);
  const auto& names = Names();
  for (auto _ : state) {
    for (const std::string& n : names) benchmark::DoNotOptimize(c->Classify(n, Platform::kAmd));
  }
  Report(state, names);
}

void BM_Cached(benchmark::State& state, const char* set) {
  auto c = Load(set);
  const auto& names = Names();
  StringMap<RuleId> cache;
  for (const std::string& n : names) cache.emplace(n, c->Classify(n, Platform::kAmd));
  for (auto _ : state) {
    for (const std::string& n : names) benchmark::DoNotOptimize(cache.find(n)->second);
  }
  Report(state, names);
}

// Evaluates a rule set's predicates one at a time, the way a hand-written classifier does:
// literals lowered and regexes compiled once, up front; each name lowered once.
class SubstringBaseline {
 public:
  explicit SubstringBaseline(const RuleSet& rules) : rules_(rules) {
    std::vector<const Predicate*> stack;
    for (const Rule& r : rules.rules()) stack.push_back(&r.when);
    while (!stack.empty()) {
      const Predicate* p = stack.back();
      stack.pop_back();
      for (const Predicate& c : p->children) stack.push_back(&c);
      if (p->kind == Predicate::Kind::kRegex) {
        regex_.emplace(
            p, std::regex(p->text, p->caseless ? std::regex::icase : std::regex::ECMAScript));
      } else {
        literal_[p] = p->caseless ? Lower(p->text) : p->text;
      }
    }
  }
  size_t Classify(const std::string& name, Platform platform) const {
    std::string lower = Lower(name);
    for (size_t i = 0; i < rules_.rules().size(); ++i) {
      if (Eval(rules_.rules()[i].when, name, lower, platform)) return i;
    }
    return rules_.rules().size();
  }

 private:
  static std::string Lower(const std::string& s) {
    std::string l = s;
    for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return l;
  }
  bool Eval(const Predicate& p, const std::string& name, const std::string& lower,
            Platform platform) const {
    const std::string& hay = p.caseless ? lower : name;
    switch (p.kind) {
      case Predicate::Kind::kContains:
        return hay.find(literal_.at(&p)) != std::string::npos;
      case Predicate::Kind::kPrefix:
        return hay.compare(0, literal_.at(&p).size(), literal_.at(&p)) == 0;
      case Predicate::Kind::kRegex:
        return std::regex_search(name, regex_.at(&p));
      case Predicate::Kind::kWord:
        return ContainsWord(name, p.text);
      case Predicate::Kind::kPlatform:
        return p.platform == platform;
      case Predicate::Kind::kNot:
        return !Eval(p.children[0], name, lower, platform);
      case Predicate::Kind::kAll:
        return std::all_of(p.children.begin(), p.children.end(),
                           [&](const Predicate& c) { return Eval(c, name, lower, platform); });
      case Predicate::Kind::kAny:
        return std::any_of(p.children.begin(), p.children.end(),
                           [&](const Predicate& c) { return Eval(c, name, lower, platform); });
    }
    return false;
  }
  const RuleSet& rules_;
  std::map<const Predicate*, std::string> literal_;
  std::map<const Predicate*, std::regex> regex_;
};

void BM_Baseline(benchmark::State& state, const char* set) {
  auto rules = *RuleSet::Load(set);
  SubstringBaseline baseline(*rules);
  auto c = Load(set);
  const auto& names = Names();
  for (const std::string& n : names) {
    if (baseline.Classify(n, Platform::kAmd) != c->Classify(n, Platform::kAmd)) {
      state.SkipWithError(("baseline disagrees on " + n).c_str());
      return;
    }
  }
  for (auto _ : state) {
    for (const std::string& n : names)
      benchmark::DoNotOptimize(baseline.Classify(n, Platform::kAmd));
  }
  Report(state, names);
}

BENCHMARK_CAPTURE(BM_Hyperscan, tracefuse, "tracefuse");
BENCHMARK_CAPTURE(BM_Cached, tracefuse, "tracefuse");
BENCHMARK_CAPTURE(BM_Baseline, tracefuse, "tracefuse");
BENCHMARK_CAPTURE(BM_Hyperscan, wafer_kernel, "wafer-kernel");
BENCHMARK_CAPTURE(BM_Cached, wafer_kernel, "wafer-kernel");
BENCHMARK_CAPTURE(BM_Baseline, wafer_kernel, "wafer-kernel");
BENCHMARK_CAPTURE(BM_Hyperscan, wafer_op, "wafer-op");
BENCHMARK_CAPTURE(BM_Cached, wafer_op, "wafer-op");
BENCHMARK_CAPTURE(BM_Baseline, wafer_op, "wafer-op");

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
