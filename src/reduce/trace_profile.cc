#include "tracefuse/reduce/trace_profile.h"

#include <algorithm>
#include <cassert>

#include "oneapi/tbb/parallel_for.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/reduce/op_tree.h"

namespace tracefuse {

uint8_t* KernelStream::PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

PackedCorrelations::PackedCorrelations(const std::vector<int64_t>& ids) : size_(ids.size()) {
  int64_t previous = 0;
  for (size_t g = 0; g < ids.size(); ++g) {
    if (g % kStride == 0) marks_.push_back(Mark{bytes_.size(), previous});
    uint64_t delta = static_cast<uint64_t>(ids[g]) - static_cast<uint64_t>(previous);
    delta = (delta << 1) ^ (~(delta >> 63) + 1);  // zigzag
    while (delta >= 0x80) {
      bytes_.push_back(static_cast<uint8_t>(delta | 0x80));
      delta >>= 7;
    }
    bytes_.push_back(static_cast<uint8_t>(delta));
    previous = ids[g];
  }
  bytes_.shrink_to_fit();
}

int64_t PackedCorrelations::At(uint32_t group, Cursor* cursor) const {
  assert(group < size_);
  if (group == cursor->group) return cursor->id;  // the kernels of a group come together
  if (cursor->group == UINT32_MAX || group < cursor->group || group - cursor->group > kStride) {
    const Mark& mark = marks_[group / kStride];
    // Positioned just before the mark's group: the one before it, decoded.
    *cursor = Cursor{group / kStride * kStride - 1, mark.offset, mark.id};
  }
  while (true) {
    uint64_t delta = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t byte = bytes_[cursor->offset++];
      delta |= uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) break;
    }
    delta = (delta >> 1) ^ (~(delta & 1) + 1);
    cursor->id = static_cast<int64_t>(static_cast<uint64_t>(cursor->id) + delta);
    if (++cursor->group == group) return cursor->id;
  }
}

void TraceProfile::PackGroupCorrelations() {
  packed_group_correlation = PackedCorrelations(group_correlation);
  group_correlation = std::vector<int64_t>();
}

void KernelStream::KeepPlacement() {
  assert(size_ == 0);  // every record is encoded alike
  keeps_placement_ = true;
}

void KernelStream::push_back(const KernelRecord& k) {
  if (segments_.empty() || segment_bytes_.back() + kMaxRecordBytes > kSegmentBytes) {
    segments_.emplace_back(new uint8_t[kSegmentBytes]);
    segment_bytes_.push_back(0);
  }
  // Unsigned arithmetic: any int64 values round-trip, wrapping alike in encoder and decoder.
  auto zigzag = [](uint64_t v) { return (v << 1) ^ (~(v >> 63) + 1); };
  const uint64_t ts = static_cast<uint64_t>(k.ts_ns), dur = static_cast<uint64_t>(k.dur_ns);
  uint64_t group = 0;
  if (k.group != kNoGroup) {
    assert(k.group <= state_.groups);  // groups are numbered in first-appearance order
    group = uint64_t{state_.groups} + 1 - k.group;
    if (k.group == state_.groups) ++state_.groups;
  }
  uint8_t* start = segments_.back().get() + segment_bytes_.back();
  // With placement, the group's lowest bit says whether the kernel ran elsewhere than the one
  // before: most run where the one before did, and cost no more (group codes are small).
  const bool moved = keeps_placement_ && (k.device != state_.device || k.stream != state_.stream);
  uint8_t* p = PutVarint(start, k.name);
  p = PutVarint(p, keeps_placement_ ? (group << 1) | moved : group);
  p = PutVarint(p, zigzag(dur));
  p = PutVarint(p, zigzag(ts - state_.previous_end));
  if (moved) {
    p = PutVarint(p, zigzag(static_cast<uint64_t>(int64_t{k.device})));
    p = PutVarint(p, zigzag(static_cast<uint64_t>(int64_t{k.stream})));
    state_.device = k.device;
    state_.stream = k.stream;
  }
  segment_bytes_.back() += static_cast<size_t>(p - start);
  state_.previous_end = ts + dur;

  if (size_ > 0 && k.ts_ns < previous_ts_) ++descents_;
  previous_ts_ = k.ts_ns;
  ++size_;
}

uint64_t KernelStream::encoded_bytes() const {
  uint64_t total = 0;
  for (size_t b : segment_bytes_) total += b;
  return total;
}

TraceReducer::TraceReducer(std::shared_ptr<const Classifier> classifier, bool keep_kernel_records,
                           CpuSideReading cpu_side, GpuTimelineReading gpu_timeline,
                           bool step_figures, bool launch_sites)
    : keep_kernel_records_(keep_kernel_records),
      cpu_side_(cpu_side),
      gpu_reading_(gpu_timeline),
      step_figures_(step_figures),
      step_timeline_(StepTimeline::kStreamedOpenSteps, step_figures, &launch_join_) {
  profile_.classifier = std::move(classifier);
  if (gpu_timeline == GpuTimelineReading::kCollect) {
    profile_.gpu_timeline.path = GpuTimelinePath::kCollected;
    profile_.gpu_timeline.collected_reason = "the input cannot be read twice";
  }
  profile_.host.launch_sites = launch_sites;
  if (cpu_side != CpuSideReading::kSkip) {
    profile_.cpu_ops_by_thread = std::make_shared<CpuOpsByThread>();
    RecordCpuWaits();
  }
  switch (cpu_side) {
    case CpuSideReading::kSkip:
      break;
    case CpuSideReading::kStream:
      profile_.host.path = CpuSidePath::kStreamed;
      profile_.host.stream = std::make_shared<CpuSideStream>(launch_sites);
      break;
    case CpuSideReading::kCollect:
      profile_.host.path = CpuSidePath::kAnyOrder;
      break;
  }
}

void ChunkSummary::Reserve(size_t kernels) {
  group_correlation.reserve(kernels);
  group_size.reserve(kernels);
  group_ids_.reserve(kernels);
  gpu.reserve(kernels);
  launch_runs.reserve(kernels);
}

void ChunkSummary::Summarize(const ParsedChunk& chunk, bool kernel_groups,
                             const Classifier& classifier, const std::vector<RuleId>& name_rules) {
  name_kernels.assign(chunk.name_count(), 0);
  name_time_ns.assign(chunk.name_count(), 0);
  group_correlation.clear();
  group_size.clear();
  kernel_group.clear();
  kernels_without_correlation = 0;
  ClearKeepingCapacity(&group_ids_);
  // Graph replays put long runs of kernels under one correlation id: remember the last one.
  int64_t last_correlation = 0;
  uint32_t last_group = kNoGroup;
  for (const KernelEvent& k : chunk.kernels) {
    uint32_t group = kNoGroup;
    if (k.flags & KernelEvent::kHasCorrelation) {
      if (last_group == kNoGroup || k.correlation != last_correlation) {
        auto [it, inserted] =
            group_ids_.try_emplace(k.correlation, static_cast<uint32_t>(group_size.size()));
        if (inserted) {
          group_correlation.push_back(k.correlation);
          group_size.push_back(0);
        }
        last_correlation = k.correlation;
        last_group = it->second;
      }
      group = last_group;
      ++group_size[group];
    } else {
      ++kernels_without_correlation;
    }
    ++name_kernels[k.name];
    name_time_ns[k.name] += k.dur_ns;
    if (kernel_groups) kernel_group.push_back(group);
  }
  SummarizeGpu(chunk, classifier, name_rules);
}

void ChunkSummary::SummarizeGpu(const ParsedChunk& chunk, const Classifier& classifier,
                                const std::vector<RuleId>& name_rules) {
  const std::optional<CategoryId> communication =
      classifier.rule_set().category_index("Communication");
  name_kinds.resize(chunk.name_count());
  for (size_t n = 0; n < chunk.name_count(); ++n) {
    name_kinds[n] = communication && classifier.category_of(name_rules[n]) == *communication
                        ? GpuActivityKind::kCommunication
                        : GpuActivityKind::kComputation;
  }
  gpu.clear();
  gpu_events_skipped = chunk.transfers_with_bad_times;
  for (const KernelEvent& k : chunk.kernels) {
    if ((k.flags & KernelEvent::kBadTimes) || k.dur_ns < 0) {
      ++gpu_events_skipped;
    } else {
      const bool launched = k.flags & KernelEvent::kHasCorrelation;
      gpu.push_back(GpuActivity{k.ts_ns, k.ts_ns + k.dur_ns, k.device, k.name,
                                launched ? k.correlation : kNoCorrelation, k.stream});
    }
  }
  const size_t kernels = gpu.size();
  for (const GpuTransfer& t : chunk.transfers) {
    if (t.dur_ns < 0) {
      ++gpu_events_skipped;
    } else {
      gpu.push_back(GpuActivity{t.ts_ns, t.ts_ns + t.dur_ns, t.device, kTransferName,
                                t.has_correlation ? t.correlation : kNoCorrelation, t.stream});
    }
  }
  SortByDeviceAndStart(&gpu, kernels, &merge_scratch_);
  launch_runs.clear();
  run_sweeps.clear();
  auto same_launch = [](const GpuActivity& a, const GpuActivity& b) {
    return a.device == b.device && a.correlation == b.correlation;
  };
  for (uint32_t begin = 0, end = 0; begin < gpu.size(); begin = end) {
    end = begin + 1;
    while (end < gpu.size() && same_launch(gpu[begin], gpu[end])) ++end;
    LaunchRun& run = launch_runs.emplace_back(LaunchRun{begin, end});
    if (end - begin == 1) continue;
    run.sweep = static_cast<uint32_t>(run_sweeps.size());
    DeviceSweep& sweep = run_sweeps.emplace_back();
    for (uint32_t i = begin; i < end; ++i)
      sweep.Add(gpu[i].start_ns, gpu[i].end_ns, KindOf(gpu[i], name_kinds));
  }
  // Each device's sweep from its runs': whole where a run starts after the ones before it end.
  device_sweeps.clear();
  for (const LaunchRun& run : launch_runs) {
    const int32_t device = gpu[run.begin].device;
    if (device_sweeps.empty() || device_sweeps.back().first != device)
      device_sweeps.emplace_back(device, DeviceSweep());
    DeviceSweep& sweep = device_sweeps.back().second;
    if (run.sweep != kNoRunSweep && sweep.Append(run_sweeps[run.sweep])) continue;
    for (uint32_t i = run.begin; i < run.end; ++i)
      sweep.Add(gpu[i].start_ns, gpu[i].end_ns, KindOf(gpu[i], name_kinds));
  }
}

uint32_t* GroupIndex::Page(int64_t page_id) {
  if (last_page_ != nullptr && page_id == last_page_id_) return last_page_;
  std::unique_ptr<uint32_t[]>& page = pages_[page_id];
  if (page == nullptr) {
    page = std::make_unique<uint32_t[]>(size_t{1} << kPageBits);
    std::fill_n(page.get(), size_t{1} << kPageBits, kNone);
  }
  last_page_id_ = page_id;
  last_page_ = page.get();
  return last_page_;
}

std::pair<uint32_t, bool> GroupIndex::FindOrAdd(int64_t correlation, uint32_t next) {
  if (!sparse_ && pages_.size() > 64 && (pages_.size() << kPageBits) > 16 * groups_) {
    // Too few ids per page: move them to a hash map.
    sparse_ = true;
    for (const auto& [page_id, page] : pages_) {
      for (size_t i = 0; i < (size_t{1} << kPageBits); ++i) {
        if (page[i] != kNone)
          sparse_ids_.emplace(page_id * (int64_t{1} << kPageBits) + int64_t(i), page[i]);
      }
    }
    pages_.clear();
    last_page_ = nullptr;
  }
  if (sparse_) {
    auto [it, inserted] = sparse_ids_.try_emplace(correlation, next);
    groups_ += inserted;
    return {it->second, inserted};
  }
  uint32_t& slot = Page(correlation >> kPageBits)[correlation & ((1 << kPageBits) - 1)];
  if (slot != kNone) return {slot, false};
  slot = next;
  ++groups_;
  return {next, true};
}

GroupIndex::GroupIndex(const GroupIndex& other) { *this = other; }

GroupIndex& GroupIndex::operator=(const GroupIndex& other) {
  if (this == &other) return *this;
  pages_.clear();
  for (const auto& [page_id, page] : other.pages_) {
    auto copy = std::make_unique<uint32_t[]>(size_t{1} << kPageBits);
    std::copy_n(page.get(), size_t{1} << kPageBits, copy.get());
    pages_.emplace(page_id, std::move(copy));
  }
  last_page_ = nullptr;
  groups_ = other.groups_;
  sparse_ = other.sparse_;
  sparse_ids_ = other.sparse_ids_;
  return *this;
}

std::optional<uint32_t> GroupIndex::Find(int64_t correlation) const {
  if (sparse_) {
    auto it = sparse_ids_.find(correlation);
    if (it == sparse_ids_.end()) return std::nullopt;
    return it->second;
  }
  auto page = pages_.find(correlation >> kPageBits);
  if (page == pages_.end()) return std::nullopt;
  const uint32_t slot = page->second[correlation & ((1 << kPageBits) - 1)];
  if (slot == kNone) return std::nullopt;
  return slot;
}

uint64_t GroupIndex::bytes() const {
  return pages_.size() * ((sizeof(uint32_t) << kPageBits) + sizeof(int64_t) + sizeof(void*)) +
         sparse_ids_.capacity() * (sizeof(int64_t) + sizeof(uint32_t) + 1);
}

void GroupIndex::Clear() { *this = GroupIndex(); }

void TraceReducer::Consume(const ParsedChunk& chunk, const std::vector<RuleId>& name_rules) {
  summary_.Summarize(chunk, keep_kernel_records_, *profile_.classifier, name_rules);
  Consume(chunk, summary_, name_rules);
}

void TraceReducer::Consume(const ParsedChunk& chunk, const ChunkSummary& summary,
                           const std::vector<RuleId>& name_rules) {
  TraceProfile& p = profile_;
  ConsumeHost(chunk, p.events);
  p.events += chunk.events;
  p.kernels_with_bad_times += chunk.kernels_with_bad_times;
  p.kernels_without_name += chunk.kernels_without_name;
  p.whole_graph_replays += chunk.whole_graph_replays;
  p.whole_graph_replay_ns += chunk.whole_graph_replay_ns;
  p.kernel_count += chunk.kernels.size();
  p.kernels_without_correlation += summary.kernels_without_correlation;
  p.evidence.Add(chunk.evidence);
  for (const std::pair<std::string, uint64_t>& added : chunk.categories) {
    auto it = std::find_if(p.event_categories.begin(), p.event_categories.end(),
                           [&](const auto& e) { return e.first == added.first; });
    if (it == p.event_categories.end()) {
      p.event_categories.push_back(added);
    } else {
      it->second += added.second;
    }
  }

  local_to_global_.resize(chunk.name_count());
  for (size_t i = 0; i < chunk.name_count(); ++i) {
    std::string_view name = chunk.name(i);
    std::optional<uint32_t> id = name_ids_.Find(name);
    if (!id) {
      id = static_cast<uint32_t>(p.names.size());
      p.names.emplace_back(name);
      name_ids_.Add(*id);
      p.name_rule.push_back(name_rules[i]);
      p.name_kernels.push_back(0);
      p.name_time_ns.push_back(0);
      name_communicates_.push_back(summary.name_kinds[i] == GpuActivityKind::kCommunication);
    }
    local_to_global_[i] = *id;
    p.name_kernels[*id] += summary.name_kernels[i];
    p.name_time_ns[*id] += summary.name_time_ns[i];
  }

  group_local_to_global_.resize(summary.group_size.size());
  for (size_t g = 0; g < summary.group_size.size(); ++g) {
    auto [group, inserted] = group_ids_.FindOrAdd(summary.group_correlation[g],
                                                  static_cast<uint32_t>(p.group_size.size()));
    if (inserted) {
      if (keep_kernel_records_) p.group_correlation.push_back(summary.group_correlation[g]);
      p.group_size.push_back(0);
    }
    p.group_size[group] += summary.group_size[g];
    group_local_to_global_[g] = group;
  }

  ConsumeGpu(chunk, summary);
  if (keep_placement_) KeepTransfers(chunk);
  if (!keep_kernel_records_) return;
  for (size_t i = 0; i < chunk.kernels.size(); ++i) {
    const KernelEvent& k = chunk.kernels[i];
    const uint32_t local = summary.kernel_group[i];
    p.kernels.push_back(KernelRecord{k.ts_ns, k.dur_ns, local_to_global_[k.name],
                                     local == kNoGroup ? kNoGroup : group_local_to_global_[local],
                                     k.device, k.stream});
  }
}

namespace {

// CommunicatesByName() says, per name of `p`, whether its kernels are Communication (the rule
// set's category of that name; none when the rule set has no such category).
std::vector<bool> CommunicatesByName(const TraceProfile& p) {
  std::vector<bool> communicates(p.names.size(), false);
  const std::optional<CategoryId> communication =
      p.classifier->rule_set().category_index("Communication");
  if (!communication) return communicates;
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    communicates[n] = p.category_of_name(n) == *communication;
  }
  return communicates;
}

// KernelKind() is a kernel's kind by its name (`communicates`: CommunicatesByName()); transfers
// never reach it.
GpuActivityKind KernelKind(uint32_t name, const std::vector<bool>& communicates) {
  return communicates[name] ? GpuActivityKind::kCommunication : GpuActivityKind::kComputation;
}

}  // namespace

void TraceReducer::ConsumeGpu(const ParsedChunk& chunk, const ChunkSummary& summary) {
  GpuTimeline& timeline = profile_.gpu_timeline;
  timeline.events_skipped += summary.gpu_events_skipped;
  timeline.steps_skipped += chunk.steps_with_bad_times;
  if (gpu_reading_ == GpuTimelineReading::kCollect) {
    // By the trace's names: their kinds are known for sure only once every name is classified.
    for (GpuActivity a : summary.gpu) {
      if (a.name != kTransferName) a.name = local_to_global_[a.name];
      collected_gpu_.push_back(a);
    }
    for (Launch launch : chunk.launches) {
      const std::string_view api = chunk.launch_apis[launch.api];
      auto [it, inserted] = collected_launch_api_ids_.try_emplace(
          api, static_cast<uint32_t>(collected_launch_apis_.size()));
      if (inserted) collected_launch_apis_.Append(api);
      launch.api = it->second;
      collected_launches_.push_back(launch);
    }
    for (StepAnnotation step : chunk.steps) {
      step.name = collected_step_names_.Append(chunk.step_names[step.name]);
      collected_steps_.push_back(step);
    }
    return;
  }
  if (timeline.path != GpuTimelinePath::kStreamed) return;
  for (const auto& [device, chunk_sweep] : summary.device_sweeps) {
    DeviceSweep& sweep = SweepOf(device);
    if (sweep.Append(chunk_sweep) || SweepEach(summary, device, &sweep)) continue;
    ReadGpuTimelineAgain(
        StrCat("device ", device, "'s events are out of start order near byte ", chunk.begin));
    return;
  }
  std::string out_of_order;
  // Launches first: the steps look up the launches of the activities they sweep.
  if (!ConsumeLaunches(chunk, summary, &out_of_order) ||
      !ConsumeSteps(chunk, summary, &out_of_order)) {
    ReadGpuTimelineAgain(StrCat(out_of_order, " near byte ", chunk.begin));
    return;
  }
  for (const GpuActivity& a : summary.gpu) {
    if (a.name != kTransferName && summary.name_kinds[a.name] == GpuActivityKind::kCommunication) {
      timeline.collectives.push_back(
          Collective{a.start_ns, a.end_ns - a.start_ns, a.device, local_to_global_[a.name]});
    }
  }
}

bool TraceReducer::ConsumeSteps(const ParsedChunk& chunk, const ChunkSummary& summary,
                                std::string* out_of_order) {
  step_timeline_.NextChunk();
  for (const StepAnnotation& step : chunk.steps) {
    if (!step_timeline_.AddStep(chunk.step_names[step.name], step.ts_ns,
                                step.ts_ns + step.dur_ns)) {
      *out_of_order = "a step annotation comes after the launches inside it";
      return false;
    }
  }
  for (const Launch& launch : chunk.launches) {
    if (!step_timeline_.AddLaunch(launch.ts_ns, launch.correlation)) {
      *out_of_order = StrCat("a GPU event's launch comes after ", StepTimeline::kKeptAside,
                             " others waiting for theirs");
      return false;
    }
  }
  if (!step_timeline_.Release()) {
    *out_of_order = "a GPU event swept after a later one of its step";
    return false;
  }
  if (summary.gpu.empty() || !step_timeline_.measuring()) return true;
  for (const LaunchRun& run : summary.launch_runs) {
    const DeviceSweep* run_sweep =
        run.sweep == kNoRunSweep ? nullptr : &summary.run_sweeps[run.sweep];
    if (!step_timeline_.AddRun(run, run_sweep, summary.gpu, summary.name_kinds)) {
      *out_of_order =
          StrCat("device ", summary.gpu[run.begin].device, "'s steps are out of start order");
      return false;
    }
  }
  if (step_timeline_.pending() > StepTimeline::kMaxPending) {
    *out_of_order =
        StrCat("over ", StepTimeline::kMaxPending, " GPU events wait for their launches");
    return false;
  }
  return true;
}

bool TraceReducer::ConsumeLaunches(const ParsedChunk& chunk, const ChunkSummary& summary,
                                   std::string* out_of_order) {
  launch_join_.NextChunk();
  if (!launch_join_.AddLaunches(chunk.launches, chunk.launch_apis)) {
    *out_of_order =
        StrCat("a launch comes over ", LaunchJoin::kWindowChunks, " chunks after its GPU events");
    return false;
  }
  for (const LaunchRun& run : summary.launch_runs) {
    if (!launch_join_.AddRun(&summary.gpu[run.begin], run.end - run.begin)) {
      *out_of_order = StrCat("a GPU event comes over ", LaunchJoin::kWindowChunks,
                             " chunks after its launch was last used");
      return false;
    }
  }
  if (launch_join_.waiting() > LaunchJoin::kMaxWaiting) {
    *out_of_order =
        StrCat("over ", LaunchJoin::kMaxWaiting, " GPU gaps and events wait for launches");
    return false;
  }
  return true;
}

void TraceReducer::ReadGpuTimelineAgain(std::string reason) {
  GpuTimeline& timeline = profile_.gpu_timeline;
  timeline.path = GpuTimelinePath::kReadAgain;
  timeline.collected_reason = std::move(reason);
  sweeps_.clear();
  step_timeline_ = StepTimeline(StepTimeline::kStreamedOpenSteps, step_figures_, &launch_join_);
  launch_join_ = LaunchJoin();
  timeline.collectives = {};
  timeline.cpu_wait_spans = {};  // the pass that reads it again records its own
}

bool TraceReducer::SweepEach(const ChunkSummary& summary, int32_t device, DeviceSweep* sweep) {
  const auto first = std::lower_bound(summary.gpu.begin(), summary.gpu.end(), device,
                                      [](const GpuActivity& a, int32_t d) { return a.device < d; });
  for (auto a = first; a != summary.gpu.end() && a->device == device; ++a) {
    if (!sweep->Add(a->start_ns, a->end_ns, KindOf(*a, summary.name_kinds))) return false;
  }
  return true;
}

DeviceSweep& TraceReducer::SweepOf(int32_t device) {
  for (auto& [d, sweep] : sweeps_) {
    if (d == device) return sweep;
  }
  sweeps_.emplace_back(device, DeviceSweep());
  return sweeps_.back().second;
}

void TraceReducer::FinishGpuTimeline() {
  GpuTimeline& timeline = profile_.gpu_timeline;
  const std::vector<bool> communicates = CommunicatesByName(profile_);
  if (gpu_reading_ == GpuTimelineReading::kCollect) {
    FinishCollectedGpuTimeline(communicates);
    return;
  }
  if (timeline.path != GpuTimelinePath::kStreamed) return;
  if (name_communicates_ != communicates) {
    // Re-classified for another platform (Finish()): the sweeps counted some kernels' time as
    // the wrong kind.
    ReadGpuTimelineAgain("the platform found at the end changed which kernels communicate");
    return;
  }
  std::sort(sweeps_.begin(), sweeps_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // Each device's in start order already; devices interleave by chunk.
  std::stable_sort(timeline.collectives.begin(), timeline.collectives.end(),
                   [](const Collective& a, const Collective& b) { return a.device < b.device; });
  for (const auto& [device, sweep] : sweeps_) {
    timeline.devices.push_back(DeviceTimeline{device, sweep.Figures(), {}, {}, {}, {}});
  }
  sweeps_.clear();
  launch_join_.Finish(&timeline);
  if (!step_timeline_.Finish(&timeline)) {
    timeline.devices.clear();
    ReadGpuTimelineAgain("a device's steps are out of start order at the end");
  }
}

void TraceReducer::FinishCollectedGpuTimeline(const std::vector<bool>& communicates) {
  GpuTimeline& timeline = profile_.gpu_timeline;
  SortByDeviceAndStart(&collected_gpu_);
  LaunchJoin launches;  // every launch known before the first activity, none dropped
  launches.AddLaunches(collected_launches_, collected_launch_apis_);
  // Every launch is known before the first activity, and no step closes early.
  StepTimeline steps(SIZE_MAX, step_figures_, &launches);
  if (record_cpu_waits_) {
    launches.RecordCpuWaits(&timeline.cpu_wait_spans);
    steps.RecordCpuWaits(&timeline.cpu_wait_spans);
  }
  for (const StepAnnotation& s : collected_steps_) {
    steps.AddStep(collected_step_names_[s.name], s.ts_ns, s.ts_ns + s.dur_ns);
  }
  for (const Launch& launch : collected_launches_)
    steps.AddLaunch(launch.ts_ns, launch.correlation);
  for (const GpuActivity& a : collected_gpu_) {
    const GpuActivityKind kind =
        a.name == kTransferName ? GpuActivityKind::kMemcpy : KernelKind(a.name, communicates);
    if (kind == GpuActivityKind::kCommunication) {
      timeline.collectives.push_back(
          Collective{a.start_ns, a.end_ns - a.start_ns, a.device, a.name});
    }
    steps.AddActivity(
        StepActivity{a.start_ns, a.end_ns, a.correlation, a.device, kind, 0, a.stream});
  }
  for (const GpuActivity& a : collected_gpu_) {
    launches.AddActivity(a.device, a.start_ns, a.end_ns, a.correlation, a.stream);
  }
  timeline.devices = SweepCollected(std::move(collected_gpu_),
                                    [&](uint32_t name) { return KernelKind(name, communicates); });
  launches.Finish(&timeline);
  steps.Finish(&timeline);
  collected_gpu_ = {};
  collected_launches_ = {};
  collected_launch_apis_ = InternedStrings();
  collected_launch_api_ids_ = {};
  collected_steps_ = {};
}

namespace {

// Interns `table`'s strings into the trace's `strings`, giving each local index its global one.
void InternAll(const InternedStrings& table, StringMap<uint32_t>* ids,
               std::vector<std::string>* strings, std::vector<uint32_t>* to_global) {
  to_global->resize(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    auto [it, inserted] = ids->try_emplace(table[i], static_cast<uint32_t>(strings->size()));
    if (inserted) strings->emplace_back(table[i]);
    (*to_global)[i] = it->second;
  }
}

}  // namespace

void TraceReducer::KeepPlacement() {
  keep_placement_ = true;
  profile_.kernels.KeepPlacement();
  profile_.host.unit_spans = true;
  profile_.host.pack_correlations = true;
  if (profile_.host.stream) profile_.host.stream->KeepUnitSpans();
}

void TraceReducer::KeepTransfers(const ParsedChunk& chunk) {
  const InternedStrings& names = chunk.transfer_names;
  transfer_local_to_global_.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    auto [it, added] = transfer_name_ids_.try_emplace(
        names[i], static_cast<uint32_t>(profile_.transfer_names.size()));
    if (added) profile_.transfer_names.emplace_back(names[i]);
    transfer_local_to_global_[i] = it->second;
  }
  for (const GpuTransfer& t : chunk.transfers) {
    profile_.transfers.push_back(TransferRecord{t.ts_ns, t.dur_ns, t.correlation, t.device,
                                                t.stream, transfer_local_to_global_[t.name]});
  }
}

void TraceReducer::SkipIdleCpuOps() {
  profile_.cpu_ops_by_thread.reset();
  record_cpu_waits_ = false;
  launch_join_.RecordCpuWaits(nullptr);
  step_timeline_.RecordCpuWaits(nullptr);
}

void TraceReducer::RecordCpuWaits() {
  record_cpu_waits_ = true;
  launch_join_.RecordCpuWaits(&profile_.gpu_timeline.cpu_wait_spans);
  step_timeline_.RecordCpuWaits(&profile_.gpu_timeline.cpu_wait_spans);
}

void TraceReducer::ConsumeHost(const ParsedChunk& chunk, uint64_t first_position) {
  if (profile_.cpu_ops_by_thread != nullptr) profile_.cpu_ops_by_thread->Consume(chunk.host);
  switch (cpu_side_) {
    case CpuSideReading::kSkip:
      return;
    case CpuSideReading::kStream:
      if (profile_.host.stream->Consume(chunk.host, first_position,
                                        chunk.host_events_without_times)) {
        return;
      }
      // Out of order: the any-order path from this chunk on, and the CPU events before it read
      // again (the stream has let them go).
      cpu_side_ = CpuSideReading::kCollect;
      profile_.host.path = CpuSidePath::kAnyOrder;
      profile_.host.any_order_reason = profile_.host.stream->disorder();
      profile_.host.events_read_again = first_position;
      profile_.host.events_without_times = profile_.host.stream->events_without_times();
      profile_.host.stream.reset();
      break;
    case CpuSideReading::kCollect:
      break;
  }
  CollectHost(chunk, first_position);
}

void TraceReducer::CollectHost(const ParsedChunk& chunk, uint64_t first_position) {
  const HostActivity& local = chunk.host;
  TraceHost& host = profile_.host;
  host.events_without_times += chunk.host_events_without_times;
  if (local.ops.empty() && local.calls.empty()) return;
  InternAll(local.names, &host_name_ids_, &host.names, &host_names_to_global_);
  InternAll(local.threads, &host_thread_ids_, &host.threads, &host_threads_to_global_);
  InternAll(local.shapes, &host_shape_ids_, &host.shapes, &host_shapes_to_global_);
  auto position = [first_position](uint32_t p) {
    return static_cast<uint32_t>(first_position + p);
  };
  for (HostOp op : local.ops) {
    op.thread = host_threads_to_global_[op.thread];
    op.name = host_names_to_global_[op.name];
    if (op.shapes != kNoShapes) op.shapes = host_shapes_to_global_[op.shapes];
    op.position = position(op.position);
    host.ops.push_back(op);
  }
  for (RuntimeCall call : local.calls) {
    call.thread = host_threads_to_global_[call.thread];
    call.name = host_names_to_global_[call.name];
    call.position = position(call.position);
    host.calls.push_back(call);
  }
}

uint64_t TraceHost::CollectedBytes() const {
  uint64_t bytes = ops.capacity() * sizeof(HostOp) + calls.capacity() * sizeof(RuntimeCall);
  for (const std::string& s : names) bytes += sizeof(s) + s.capacity();
  for (const std::string& s : threads) bytes += sizeof(s) + s.capacity();
  for (const std::string& s : shapes) bytes += sizeof(s) + s.capacity();
  return bytes;
}

void TraceHost::Append(const TraceHost& later) {
  StringMap<uint32_t> name_ids, thread_ids, shape_ids;
  auto intern = [](const std::vector<std::string>& from, StringMap<uint32_t>* ids,
                   std::vector<std::string>* strings) {
    for (uint32_t i = 0; i < strings->size(); ++i) ids->try_emplace((*strings)[i], i);
    std::vector<uint32_t> to(from.size());
    for (size_t i = 0; i < from.size(); ++i) {
      auto [it, added] = ids->try_emplace(from[i], static_cast<uint32_t>(strings->size()));
      if (added) strings->push_back(from[i]);
      to[i] = it->second;
    }
    return to;
  };
  const std::vector<uint32_t> name = intern(later.names, &name_ids, &names);
  const std::vector<uint32_t> thread = intern(later.threads, &thread_ids, &threads);
  const std::vector<uint32_t> shape = intern(later.shapes, &shape_ids, &shapes);
  for (HostOp op : later.ops) {
    op.name = name[op.name];
    op.thread = thread[op.thread];
    if (op.shapes != kNoShapes) op.shapes = shape[op.shapes];
    ops.push_back(op);
  }
  for (RuntimeCall call : later.calls) {
    call.name = name[call.name];
    call.thread = thread[call.thread];
    calls.push_back(call);
  }
  events_without_times += later.events_without_times;
}

TraceProfile TraceReducer::Finish(TraceMetadata metadata, Platform classified_with) {
  TraceProfile& p = profile_;
  p.metadata = std::move(metadata);
  p.platform = DetectPlatform(p.metadata, p.evidence, p.names, &p.platform_evidence);
  p.gpu = p.metadata.gpu_name.value_or("");
  if (p.classifier->rule_set().platform_dependent() && p.platform != classified_with) {
    tbb::parallel_for(size_t{0}, p.names.size(), [&](size_t i) {
      p.name_rule[i] = p.classifier->Classify(p.names[i], p.platform);
    });
  }
  FinishGpuTimeline();
  std::stable_sort(p.event_categories.begin(), p.event_categories.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  name_ids_.Clear();
  group_ids_.Clear();
  host_name_ids_.clear();
  host_thread_ids_.clear();
  host_shape_ids_.clear();
  return std::move(p);
}

std::string_view ByOpStateName(ByOpClassification::State state) {
  using State = ByOpClassification::State;
  switch (state) {
    case State::kOff:
      return "off";
    case State::kNothingLeft:
      return "nothing left";
    case State::kNoCpuSide:
      return "no cpu side";
    case State::kCannotReadTwice:
      return "cannot read twice";
    case State::kPending:
      return "pending";
    case State::kDone:
      return "done";
  }
  return "";
}

std::vector<CategoryTotals> TraceProfile::PerCategory() const {
  std::vector<CategoryTotals> totals(category_count());
  for (size_t n = 0; n < names.size(); ++n) {
    CategoryTotals& t = totals[category_of_name(static_cast<uint32_t>(n))];
    t.kernels += name_kernels[n];
    t.time_ns += name_time_ns[n];
  }
  return totals;
}

std::vector<CategoryId> TraceProfile::NameCategories() const {
  std::vector<CategoryId> name_category(names.size());
  for (uint32_t n = 0; n < names.size(); ++n) name_category[n] = category_of_name(n);
  return name_category;
}

std::vector<CategoryId> TraceProfile::TypeSequence() const {
  const std::vector<CategoryId> name_category = NameCategories();
  std::vector<CategoryId> types;
  types.reserve(kernels.size());
  kernels.ForEachInTsOrder([&](const KernelRecord& k) { types.push_back(name_category[k.name]); });
  return types;
}

std::vector<ChainStats> ChainsOf(const std::vector<CategoryId>& types, size_t category_count) {
  std::vector<ChainStats> chains(category_count);
  size_t i = 0;
  while (i < types.size()) {
    size_t j = i + 1;
    while (j < types.size() && types[j] == types[i]) ++j;
    ChainStats& c = chains[types[i]];
    uint64_t run = j - i;
    c.runs += 1;
    c.kernels += run;
    if (run > 1) {
      c.multi_runs += 1;
      c.multi_kernels += run;
    }
    i = j;
  }
  return chains;
}

size_t TraceProfile::GroupsAtLeast(uint32_t size) const {
  return static_cast<size_t>(std::count_if(group_size.begin(), group_size.end(),
                                           [size](uint32_t s) { return s >= size; }));
}

}  // namespace tracefuse
