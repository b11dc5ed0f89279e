// Stage 5 of the pipeline: per-trace reduction.
//
// The reducer consumes parsed chunks in input order and keeps, per trace: every distinct kernel
// name once (interned, with its classification, count and total time), one compact record per
// kernel, correlation groups in first-appearance order (all kernels of one CUDA/HIP graph replay
// share the launch's correlation id), and event counts per `cat`. Derived views (per-category
// totals, the ts-ordered type sequence, chain statistics, group member lists) are computed from
// these on demand.
//
// Memory per kernel event: 24 bytes of KernelRecord, plus, for a kernel that opens a new
// correlation group, about 30 bytes of group bookkeeping (hash slot, id, size). Names cost their
// length once per distinct name.
#ifndef TRACEFUSE_REDUCE_H_
#define TRACEFUSE_REDUCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/classify.h"
#include "tracefuse/parse.h"
#include "tracefuse/strings.h"

namespace tracefuse {

inline constexpr uint32_t kNoGroup = UINT32_MAX;

struct KernelRecord {
  int64_t ts_ns;
  int64_t dur_ns;
  uint32_t name;   // index into TraceProfile::names
  uint32_t group;  // index into the group arrays, or kNoGroup
};
static_assert(sizeof(KernelRecord) == 24, "keep kernel records compact");

struct CategoryTotals {
  uint64_t kernels = 0;
  int64_t time_ns = 0;
};

// Kernel records in fixed-size segments. Growing never copies records nor touches memory twice:
// fresh pages cost about 0.3 GB/s to fault in on these machines, so the doubling of a
// std::vector (which writes every record again, into twice the memory) was a visible share of
// the whole run.
class KernelStore {
 public:
  void push_back(const KernelRecord& k) {
    if ((size_ & kMask) == 0) segments_.emplace_back(new KernelRecord[kSegment]);
    segments_.back()[size_ & kMask] = k;
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const KernelRecord& operator[](size_t i) const { return segments_[i >> kShift][i & kMask]; }

 private:
  static constexpr size_t kShift = 16;
  static constexpr size_t kSegment = size_t{1} << kShift;  // 1.5 MiB of records
  static constexpr size_t kMask = kSegment - 1;
  std::vector<std::unique_ptr<KernelRecord[]>> segments_;
  size_t size_ = 0;
};

// Run lengths of one category in the ts-ordered type sequence.
struct ChainStats {
  uint64_t runs = 0;           // maximal runs of consecutive kernels of this category
  uint64_t multi_runs = 0;     // runs longer than one kernel
  uint64_t multi_kernels = 0;  // kernels in those runs
  uint64_t kernels = 0;        // all kernels of this category
};

// Chain statistics of a type sequence (categories in ts order), indexed by category.
std::vector<ChainStats> ChainsOf(const std::vector<uint16_t>& types, size_t category_count);

// Member lists of chosen correlation groups in compressed form: the i-th chosen group holds
// members[offsets[i] .. offsets[i + 1]), kernel indices in trace order.
struct GroupMembers {
  std::vector<uint32_t> offsets;
  std::vector<uint32_t> members;
};

struct TraceProfile {
  std::string path;
  uint64_t input_bytes = 0;  // uncompressed JSON bytes
  uint64_t file_bytes = 0;   // on disk
  bool compressed = false;
  double elapsed_seconds = 0;

  TraceMetadata metadata;
  Platform platform = Platform::kUnknown;
  std::string platform_evidence;  // why `platform` was chosen
  std::string gpu;                // "" when the trace names none

  uint64_t events = 0;
  std::vector<std::pair<std::string, uint64_t>> event_categories;  // by count, descending
  EventEvidence evidence;
  uint64_t kernels_with_bad_times = 0;

  std::shared_ptr<const Classifier> classifier;
  std::vector<std::string> names;
  std::vector<RuleId> name_rule;
  std::vector<uint64_t> name_kernels;
  std::vector<int64_t> name_time_ns;

  uint64_t kernel_count = 0;
  KernelStore kernels;  // trace order; empty when the pipeline was told not to keep records
  uint64_t kernels_without_correlation = 0;
  std::vector<int64_t> group_correlation;
  std::vector<uint32_t> group_size;

  uint16_t category_of_name(uint32_t name) const {
    return classifier->category_of(name_rule[name]);
  }
  uint16_t category_of(const KernelRecord& k) const { return category_of_name(k.name); }
  const std::string& category_name(uint16_t c) const { return classifier->category_name(c); }
  size_t category_count() const { return classifier->rule_set().categories().size(); }

  std::vector<CategoryTotals> PerCategory() const;  // indexed by category
  std::vector<uint32_t> TsOrder() const;            // kernel indices sorted by ts, stable
  std::vector<uint16_t> TypeSequence() const;       // categories in ts order
  GroupMembers BuildGroupMembers(const std::vector<uint32_t>& groups) const;
  size_t GroupsAtLeast(uint32_t size) const;
};

class TraceReducer {
 public:
  // `keep_kernel_records`: whether to keep one record per kernel (the fusion analysis needs
  // them); per-name, per-category and per-group totals are kept either way.
  TraceReducer(std::shared_ptr<const Classifier> classifier, bool keep_kernel_records = true);

  // Chunks must arrive in input order.
  void Consume(const ParsedChunk& chunk);
  // Completes the profile: platform detection (and re-classification when a platform-dependent
  // rule set was applied with another platform than the one finally detected).
  TraceProfile Finish(TraceMetadata metadata, Platform classified_with);

 private:
  TraceProfile profile_;
  bool keep_kernel_records_;
  StringMap<uint32_t> name_ids_;
  absl::flat_hash_map<int64_t, uint32_t> group_ids_;
  std::vector<uint32_t> local_to_global_;
};

// Decides the platform from the top-level metadata, then event evidence, then kernel-name
// families, in that order (see README, "Platform detection"). `evidence_out` says which test
// decided.
Platform DetectPlatform(const TraceMetadata& metadata, const EventEvidence& events,
                        const std::vector<std::string>& kernel_names, std::string* evidence_out);

}  // namespace tracefuse

#endif  // TRACEFUSE_REDUCE_H_
