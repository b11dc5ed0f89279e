#include "tracefuse/reduce/cpu_wait_ops.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace tracefuse {
namespace {

constexpr uint32_t kNotInterned = UINT32_MAX;

// Interned() is `table`'s string `i` in `strings`, interning it on first use; `local` caches the
// chunk's indices.
uint32_t Interned(const InternedStrings& table, uint32_t i, std::vector<uint32_t>* local,
                  StringMap<uint32_t>* ids, std::vector<std::string>* strings) {
  uint32_t& global = (*local)[i];
  if (global == kNotInterned) {
    auto [it, inserted] = ids->try_emplace(table[i], static_cast<uint32_t>(ids->size()));
    if (inserted && strings != nullptr) strings->emplace_back(table[i]);
    global = it->second;
  }
  return global;
}

// TopOps() is the kCpuOpsListed ops of most time in `times` (by op name index), by time then name.
std::vector<CpuOpTime> TopOps(const absl::flat_hash_map<uint32_t, int64_t>& times,
                              const std::vector<std::string>& names) {
  std::vector<CpuOpTime> top;
  for (const auto& [name, ns] : times) top.push_back(CpuOpTime{names[name], ns});
  std::sort(top.begin(), top.end(), [](const CpuOpTime& a, const CpuOpTime& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.op < b.op;
  });
  if (top.size() > kCpuOpsListed) top.resize(kCpuOpsListed);
  return top;
}

}  // namespace

void CpuOpsByThread::Consume(const HostActivity& chunk) {
  chunk_names_.assign(chunk.names.size(), kNotInterned);
  chunk_threads_.assign(chunk.threads.size(), kNotInterned);
  auto thread_of = [&](uint32_t local) {
    const uint32_t thread =
        Interned(chunk.threads, local, &chunk_threads_, &thread_ids_, /*strings=*/nullptr);
    if (thread == threads_.size()) threads_.emplace_back();
    return thread;
  };
  for (const HostOp& op : chunk.ops) {
    // An op of no length overlaps nothing, and encloses no op that does.
    if (op.kind != HostOpKind::kOperator || op.dur_ns <= 0) continue;
    constexpr std::string_view kStep = "ProfilerStep#";  // 2021-era traces: a step
    if (chunk.names[op.name].substr(0, kStep.size()) == kStep) continue;
    const uint32_t name = Interned(chunk.names, op.name, &chunk_names_, &name_ids_, &names_);
    Add(thread_of(op.thread), Op{op.ts_ns, op.ts_ns + op.dur_ns, name});
  }
  for (const RuntimeCall& call : chunk.calls) {
    std::unique_ptr<uint32_t[]>& page = launch_threads_[call.correlation >> kPageBits];
    if (page == nullptr) page = std::make_unique<uint32_t[]>(size_t{1} << kPageBits);
    uint32_t& thread = page[call.correlation & ((1 << kPageBits) - 1)];
    if (thread == 0) thread = thread_of(call.thread) + 1;  // the first call of an id is its launch
  }
}

void CpuOpsByThread::Add(uint32_t thread, const Op& op) {
  Thread& t = threads_[thread];
  if (t.in_order && !t.ops.empty() && op.start_ns < t.ops.back().end_ns) {
    Op& last = t.ops.back();
    if (op.start_ns >= last.start_ns && op.end_ns <= last.end_ns) return;  // inside the last
    if (op.start_ns == last.start_ns) {  // around it: the earlier ones end before both start
      last = op;
      return;
    }
    t.in_order = false;  // it starts before the last, or straddles its end
  }
  t.ops.push_back(op);
}

uint32_t CpuOpsByThread::ThreadOf(int64_t correlation) const {
  auto page = launch_threads_.find(correlation >> kPageBits);
  if (page == launch_threads_.end()) return kNoThread;
  return page->second[correlation & ((1 << kPageBits) - 1)] - 1;  // 0 - 1: kNoThread
}

void CpuOpsByThread::Finish() {
  for (Thread& t : threads_) {
    if (t.in_order) continue;
    // By start, the longer first, so that an op comes after every op that encloses it.
    std::stable_sort(t.ops.begin(), t.ops.end(), [](const Op& a, const Op& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    int64_t furthest_end = INT64_MIN;
    auto enclosed = [&furthest_end](const Op& op) {
      if (op.end_ns <= furthest_end) return true;
      furthest_end = op.end_ns;
      return false;
    };
    t.ops.erase(std::remove_if(t.ops.begin(), t.ops.end(), enclosed), t.ops.end());
    t.in_order = true;
  }
}

void AttributeCpuWaits(CpuOpsByThread* cpu, GpuTimeline* timeline) {
  cpu->Finish();
  // Per thread, the furthest end of its ops up to each: ops that straddle their neighbours'
  // ends (wrong times) leave ends out of order, and a span's first overlapping op is the first
  // whose furthest end passes the span's start.
  std::vector<std::vector<int64_t>> furthest_ends(cpu->threads_.size());
  for (size_t t = 0; t < cpu->threads_.size(); ++t) {
    int64_t furthest = INT64_MIN;
    for (const CpuOpsByThread::Op& op : cpu->threads_[t].ops) {
      furthest = std::max(furthest, op.end_ns);
      furthest_ends[t].push_back(furthest);
    }
  }
  // Per device and step (kDeviceSplit: the device's own split), each op's overlapped time.
  absl::flat_hash_map<std::pair<int32_t, uint32_t>, absl::flat_hash_map<uint32_t, int64_t>> times;
  absl::flat_hash_map<uint32_t, int64_t> all_devices;
  for (const CpuWaitSpan& span : timeline->cpu_wait_spans) {
    const uint32_t thread = cpu->ThreadOf(span.launch_correlation);
    if (thread == CpuOpsByThread::kNoThread) continue;
    const std::deque<CpuOpsByThread::Op>& ops = cpu->threads_[thread].ops;
    const std::vector<int64_t>& ends = furthest_ends[thread];
    auto& by_op = times[std::pair(span.device, span.step)];
    for (size_t i = std::upper_bound(ends.begin(), ends.end(), span.start_ns) - ends.begin();
         i < ops.size() && ops[i].start_ns < span.end_ns; ++i) {
      const int64_t overlap =
          std::min(ops[i].end_ns, span.end_ns) - std::max(ops[i].start_ns, span.start_ns);
      if (overlap <= 0) continue;
      by_op[ops[i].name] += overlap;
      if (span.step == kDeviceSplit) all_devices[ops[i].name] += overlap;
    }
  }
  auto top_of = [&](int32_t device, uint32_t step) {
    auto it = times.find(std::pair(device, step));
    return it == times.end() ? std::vector<CpuOpTime>() : TopOps(it->second, cpu->names_);
  };
  for (DeviceTimeline& d : timeline->devices) {
    d.idle.cpu_ops = top_of(d.device, kDeviceSplit);
    for (StepFigures& s : d.steps) s.idle.cpu_ops = top_of(d.device, s.step);
  }
  timeline->cpu_ops = TopOps(all_devices, cpu->names_);
  timeline->cpu_wait_spans = {};
  *cpu = CpuOpsByThread();
}

}  // namespace tracefuse
