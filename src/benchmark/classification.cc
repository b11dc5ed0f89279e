#include "tracefuse/benchmark/classification.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "oneapi/tbb/blocked_range.h"
#include "oneapi/tbb/enumerable_thread_specific.h"
#include "oneapi/tbb/global_control.h"
#include "oneapi/tbb/parallel_for.h"
#include "oneapi/tbb/task_arena.h"
#include "tracefuse/base/host.h"
#include "tracefuse/base/interrupt.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// SpreadOf() is the median of `values` (the mean of the middle two for an even count), their
// minimum and maximum.
Spread SpreadOf(std::vector<double> values) {
  if (values.empty()) return Spread{};
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return Spread{median, values.front(), values.back()};
}

// CompiledSet is one rule set, ready to measure.
struct CompiledSet {
  std::shared_ptr<const Classifier> hyperscan;
  std::shared_ptr<const SubstringClassifier> baseline;
  double compile_seconds = 0;  // median
};

// Compile() builds the rule set's Classifier `repetitions` times, to time it (the first build
// may pay for page faults the others do not), and its substring baseline once.
absl::StatusOr<CompiledSet> Compile(const std::shared_ptr<const RuleSet>& rules, int repetitions) {
  CompiledSet set;
  std::vector<double> seconds;
  for (int i = 0; i < std::max(repetitions, 1); ++i) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::shared_ptr<const Classifier>> c = Classifier::Create(rules);
    seconds.push_back(SecondsSince(start));
    if (!c.ok()) return c.status();
    set.hyperscan = std::move(*c);
  }
  set.compile_seconds = SpreadOf(seconds).median;
  absl::StatusOr<std::shared_ptr<const SubstringClassifier>> baseline =
      SubstringClassifier::Create(rules);
  if (!baseline.ok()) return baseline.status();
  set.baseline = std::move(*baseline);
  return set;
}

// DescribeRule() names rule `id` of `c` for a message: "GEMM (rule at line 45)".
std::string DescribeRule(const Classifier& c, RuleId id) {
  const std::vector<Rule>& rules = c.rule_set().rules();
  const std::string& category = c.category_name(c.category_of(id));
  if (id >= rules.size()) return StrCat(category, " (the default)");
  return StrCat(category, " (rule at line ", rules[id].line, ")");
}

// CheckAgreement() fails on the first name for which the substring baseline and Hyperscan give
// different rules: the figures would compare two different classifications.
absl::Status CheckAgreement(const CompiledSet& set, const std::vector<BenchmarkName>& names) {
  const Classifier& hyperscan = *set.hyperscan;
  for (const BenchmarkName& n : names) {
    const RuleId fast = hyperscan.Classify(n.name, n.platform);
    const RuleId slow = set.baseline->Classify(n.name, n.platform);
    if (fast == slow) continue;
    return absl::InvalidArgumentError(
        StrCat("rule set '", hyperscan.rule_set().name(),
               "': the substring baseline and Hyperscan disagree on '", n.name, "' (platform ",
               PlatformName(n.platform), "): Hyperscan says ", DescribeRule(hyperscan, fast),
               ", the baseline ", DescribeRule(hyperscan, slow)));
  }
  return absl::OkStatus();
}

// PlatformCaches is one thread's name caches: a CachedClassifier classifies for one platform,
// so there is one per platform.
class PlatformCaches {
 public:
  explicit PlatformCaches(const std::shared_ptr<const Classifier>& c) {
    for (Platform p : {Platform::kUnknown, Platform::kAmd, Platform::kNvidia}) {
      caches_.emplace_back(c, p);
    }
  }
  RuleId Classify(const BenchmarkName& n) {
    return caches_[static_cast<size_t>(n.platform)].Classify(n.name);
  }

 private:
  std::vector<CachedClassifier> caches_;  // indexed by Platform
};

// TimePasses() runs `passes` passes over `names`, split in ranges over the arena's threads, and
// returns the wall time. `local()` gives the running thread's classifier once per range and
// `classify(classifier, name)` a name's rule; the rules are added up and stored once per range,
// so that no lookup can be optimised away.
template <typename Local, typename Classify>
double TimePasses(tbb::task_arena& arena, const std::vector<BenchmarkName>& names, uint64_t passes,
                  const Local& local, const Classify& classify) {
  const size_t n = names.size();
  std::atomic<uint64_t> sink{0};
  const Clock::time_point start = Clock::now();
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, passes * n),
                      [&](const tbb::blocked_range<uint64_t>& range) {
                        auto&& classifier = local();
                        size_t i = static_cast<size_t>(range.begin() % n);
                        uint64_t sum = 0;
                        for (uint64_t k = range.begin(); k != range.end(); ++k) {
                          sum += classify(classifier, names[i]);
                          if (++i == n) i = 0;
                        }
                        sink.fetch_add(sum, std::memory_order_relaxed);
                      });
  });
  return SecondsSince(start);
}

// Runs is what the runs on one thread count share.
struct Runs {
  tbb::task_arena* arena;
  const std::vector<BenchmarkName>* names;
  const CompiledSet* set;
  tbb::enumerable_thread_specific<PlatformCaches>* caches;  // warm

  // Seconds for `passes` passes of `method`.
  double Time(ClassifyMethod method, uint64_t passes) const {
    switch (method) {
      case ClassifyMethod::kHyperscan:
        return TimePasses(
            *arena, *names, passes, [this]() -> const Classifier& { return *set->hyperscan; },
            [](const Classifier& c, const BenchmarkName& n) {
              return c.Classify(n.name, n.platform);
            });
      case ClassifyMethod::kCached:
        return TimePasses(
            *arena, *names, passes, [this]() -> PlatformCaches& { return caches->local(); },
            [](PlatformCaches& c, const BenchmarkName& n) { return c.Classify(n); });
      case ClassifyMethod::kSubstring:
        return TimePasses(
            *arena, *names, passes,
            [this]() -> const SubstringClassifier& { return *set->baseline; },
            [](const SubstringClassifier& c, const BenchmarkName& n) {
              return c.Classify(n.name, n.platform);
            });
    }
    return 0;
  }
};

// Method is one way of classifying, as measured on one thread count.
struct Method {
  explicit Method(ClassifyMethod m) : method(m) {}
  ClassifyMethod method;
  uint64_t passes = 1;
  std::vector<double> names_per_second;  // per repetition
};

// MorePasses() is the passes that should last `wanted` seconds, `passes` having lasted `seconds`:
// a quarter more than the estimate, at least one more pass and at most ten times as many.
uint64_t MorePasses(uint64_t passes, double seconds, double wanted) {
  const double estimate =
      std::ceil(static_cast<double>(passes) * 1.25 * wanted / std::max(seconds, 1e-9));
  return std::clamp(static_cast<uint64_t>(estimate), passes + 1, passes * 10);
}

// Calibrate() warms what the threads keep (name caches, Hyperscan scratch) with runs of a tenth
// of `min_seconds`, and sets the passes of a run of about `min_seconds` from the last of them.
void Calibrate(const Runs& runs, Method* method, double min_seconds) {
  const double tenth = min_seconds / 10;
  double seconds = runs.Time(method->method, method->passes);
  while (seconds < tenth) {
    method->passes = MorePasses(method->passes, seconds, tenth);
    seconds = runs.Time(method->method, method->passes);
  }
  const double scaled =
      std::ceil(static_cast<double>(method->passes) * 1.3 * min_seconds / std::max(seconds, 1e-9));
  method->passes = std::max<uint64_t>(1, static_cast<uint64_t>(scaled));
}

// Repeat() runs passes until a run lasts `min_seconds`, growing `method->passes` when it did not
// (once calibrated it mostly does at once), and returns the names per second of that run.
double Repeat(const Runs& runs, Method* method, double min_seconds) {
  const size_t names = runs.names->size();
  while (true) {
    const double seconds = runs.Time(method->method, method->passes);
    if (seconds >= min_seconds) return static_cast<double>(method->passes * names) / seconds;
    method->passes = MorePasses(method->passes, seconds, min_seconds);
  }
}

// MeasureThreads() measures the three methods on `threads` threads: each calibrated (and warmed),
// then the repetitions, the methods interleaved.
absl::Status MeasureThreads(const CompiledSet& set, const BenchmarkNames& names, int threads,
                            const ClassificationBenchmarkOptions& options,
                            std::vector<ClassifyMeasurement>* results) {
  // More threads than TBB would start by default (the CPUs available) when asked for.
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                  static_cast<size_t>(threads));
  tbb::task_arena arena(threads);
  PlatformCaches warm(set.hyperscan);
  for (const BenchmarkName& n : names.names) warm.Classify(n);
  tbb::enumerable_thread_specific<PlatformCaches> caches(warm);  // each thread copies it
  const Runs runs{&arena, &names.names, &set, &caches};
  std::array<Method, 3> methods = {Method(ClassifyMethod::kHyperscan),
                                   Method(ClassifyMethod::kCached),
                                   Method(ClassifyMethod::kSubstring)};
  for (Method& m : methods) Calibrate(runs, &m, options.min_seconds);
  for (int r = 0; r < options.repetitions; ++r) {
    for (Method& m : methods) {
      if (InterruptSignal() != 0) {
        return InterruptedError(
            StrCat("while benchmarking rule set '", set.hyperscan->rule_set().name(), "'"));
      }
      m.names_per_second.push_back(Repeat(runs, &m, options.min_seconds));
    }
  }
  const double bytes_per_name =
      static_cast<double>(names.name_bytes) / static_cast<double>(names.names.size());
  for (const Method& m : methods) {
    ClassifyMeasurement& out = results->emplace_back();
    out.rule_set = set.hyperscan->rule_set().name();
    out.compile_seconds = set.compile_seconds;
    out.database_bytes = set.hyperscan->database_bytes();
    out.threads = threads;
    out.method = m.method;
    out.names_per_second = SpreadOf(m.names_per_second);
    std::vector<double> mb;
    for (double v : m.names_per_second) mb.push_back(v * bytes_per_name / 1e6);
    out.mb_per_second = SpreadOf(mb);
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view ClassifyMethodName(ClassifyMethod method) {
  switch (method) {
    case ClassifyMethod::kHyperscan:
      return "hyperscan";
    case ClassifyMethod::kCached:
      return "cached";
    case ClassifyMethod::kSubstring:
      return "substring";
  }
  return "hyperscan";
}

MachineInfo DescribeMachine() {
  MachineInfo m;
  m.hostname = HostName();
  m.cpu_model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    const size_t colon = line.find(':');
    if (line.rfind("model name", 0) != 0 || colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) m.cpu_model = line.substr(start);
    break;
  }
  m.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  return m;
}

std::vector<int> DefaultBenchmarkThreads() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores <= 1) return {1};
  return {1, cores};
}

absl::StatusOr<ClassificationBenchmark> RunClassificationBenchmark(
    BenchmarkNames names, const std::vector<std::shared_ptr<const RuleSet>>& rule_sets,
    const ClassificationBenchmarkOptions& options) {
  ClassificationBenchmark b;
  b.tracefuse_version = TRACEFUSE_VERSION;
  b.date = UtcNow();
  b.machine = DescribeMachine();
  b.names = std::move(names);
  b.repetitions = options.repetitions;
  b.min_seconds = options.min_seconds;
  if (b.names.names.empty()) return absl::InvalidArgumentError("no kernel name to classify");
  std::vector<int> threads;
  for (int t : options.threads.empty() ? DefaultBenchmarkThreads() : options.threads) {
    if (std::find(threads.begin(), threads.end(), t) == threads.end()) threads.push_back(t);
  }
  for (const std::shared_ptr<const RuleSet>& rules : rule_sets) {
    absl::StatusOr<CompiledSet> set = Compile(rules, options.repetitions);
    if (!set.ok()) return set.status();
    absl::Status agree = CheckAgreement(*set, b.names.names);
    if (!agree.ok()) return agree;
    for (int t : threads) {
      absl::Status measured = MeasureThreads(*set, b.names, t, options, &b.results);
      if (!measured.ok()) return measured;
    }
  }
  return b;
}

}  // namespace tracefuse
