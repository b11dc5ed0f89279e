// Builds TraceProfiles from hand-written kernel lists, through the real reducer, for tests.
#ifndef TRACEFUSE_TESTS_PROFILE_BUILDER_H_
#define TRACEFUSE_TESTS_PROFILE_BUILDER_H_

#include <string>
#include <tuple>
#include <vector>

#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse::testing {

// Categories A, B, C, D, E and Other: a name's first letter picks its category ("a1" is A,
// "gemm" would be Other), so tests can spell type sequences as strings.
inline std::shared_ptr<const Classifier> LetterClassifier() {
  static std::shared_ptr<const Classifier> c =
      *Classifier::Create(*RuleSet::FromYaml(R"(
categories: [A, B, C, D, E, Other]
rules:
  - {category: A, prefix: a}
  - {category: B, prefix: b}
  - {category: C, prefix: c}
  - {category: D, prefix: d}
  - {category: E, prefix: e}
)",
                                             "letters.yaml"));
  return c;
}

struct TestKernel {
  std::string name;
  int64_t ts_ns;
  int64_t correlation;  // < 0: none
  int64_t dur_ns = 1000;
};

// A parsed chunk holding `kernels`.
inline ParsedChunk ChunkOf(const std::vector<TestKernel>& kernels) {
  ParsedChunk p;
  for (const TestKernel& k : kernels) {
    uint32_t id = 0;
    while (id < p.name_count() && p.name(id) != k.name) ++id;
    if (id == p.name_count()) p.names.Append(k.name);
    KernelEvent e;
    e.name = id;
    e.ts_ns = k.ts_ns;
    e.dur_ns = k.dur_ns;
    if (k.correlation >= 0) {
      e.correlation = k.correlation;
      e.flags = KernelEvent::kHasCorrelation;
    }
    p.kernels.push_back(e);
  }
  p.events = p.kernels.size();
  p.categories = {{"kernel", p.kernels.size()}};
  return p;
}

// Consume() hands `kernels` to `reducer` as one chunk, names classified by `c`.
inline void Consume(TraceReducer* reducer, const std::vector<TestKernel>& kernels,
                    std::shared_ptr<const Classifier> c) {
  ParsedChunk chunk = ChunkOf(kernels);
  std::vector<RuleId> rules;
  CachedClassifier(std::move(c), Platform::kUnknown).ClassifyNames(chunk, &rules);
  reducer->Consume(chunk, rules);
}

inline TraceProfile BuildProfile(const std::vector<TestKernel>& kernels,
                                 std::shared_ptr<const Classifier> c = LetterClassifier()) {
  TraceReducer r(c);
  Consume(&r, kernels, c);
  return r.Finish(TraceMetadata(), Platform::kUnknown);
}

// One kernel per letter of `letters` ('a' -> category A, 'o' -> Other), ts 0, 1, 2, ...
// starting at `ts0`, all in correlation group `correlation` (< 0: none).
inline std::vector<TestKernel> Sequence(const std::string& letters, int64_t correlation = -1,
                                        int64_t ts0 = 0) {
  std::vector<TestKernel> out;
  for (size_t i = 0; i < letters.size(); ++i) {
    out.push_back({std::string(1, letters[i]), ts0 + static_cast<int64_t>(i), correlation});
  }
  return out;
}

inline std::vector<TestKernel> Concat(std::vector<std::vector<TestKernel>> parts) {
  std::vector<TestKernel> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The stream's records, decoded, in trace order.
inline std::vector<KernelRecord> Records(const KernelStream& s) {
  std::vector<KernelRecord> out;
  s.ForEach([&](const KernelRecord& k) { out.push_back(k); });
  return out;
}

inline std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace tracefuse::testing

#endif  // TRACEFUSE_TESTS_PROFILE_BUILDER_H_
