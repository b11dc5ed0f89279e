// Part of stage 5, library tracefuse_reduce: what the CPU ran while each GPU waited on it.
//
// The cpu_wait part of a gap (IdleSplit) is [g0, clamp(e, g0, g1)), e the end of the launch L
// the GPU waited for. IdleSplit::cpu_ops is the top-level cpu_ops (those no other cpu_op of their
// thread encloses; not the ProfilerStep#N ops of 2021-era traces, which are steps) of L's thread
// that overlap it, by overlapped time: where the CPU spent the time the GPU waited. The GPU side
// (LaunchJoin, StepTimeline) records each cpu_wait part with L's correlation id (CpuWaitSpan),
// and CpuOpsByThread each thread's top-level ops and each launch's thread, as the trace streams,
// in any order of the two; AttributeCpuWaits() joins them once both are read (the GPU timeline
// may have been read again in between).
#ifndef TRACEFUSE_REDUCE_CPU_WAIT_OPS_H_
#define TRACEFUSE_REDUCE_CPU_WAIT_OPS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/reduce/gpu_timeline.h"

namespace tracefuse {

// CpuOpsByThread is a trace's top-level cpu_ops per thread and each launch's thread. Where a
// thread's ops come in time order (Kineto writes them so), only its top-level ones are kept, 24
// bytes each; from its first op out of order, all of them, sorted and filtered by Finish(). A
// launch's thread costs 4 bytes, in pages of 4,096 consecutive correlation ids.
class CpuOpsByThread {
 public:
  // Consume() takes a chunk's CPU side, in input order.
  void Consume(const HostActivity& chunk);

 private:
  friend void AttributeCpuWaits(CpuOpsByThread* cpu, GpuTimeline* timeline);
  static constexpr uint32_t kNoThread = UINT32_MAX;
  static constexpr int kPageBits = 12;
  struct Op {
    int64_t start_ns = 0, end_ns = 0;
    uint32_t name = 0;  // index into names_
  };
  struct Thread {
    // Top-level ones while `in_order`, else all, until Finish(). In blocks: a vector's doubling
    // held up to three times the 300,000 ops of a 1 GB trace's thread while it grew.
    std::deque<Op> ops;
    bool in_order = true;
  };
  void Add(uint32_t thread, const Op& op);
  // ThreadOf() is the thread of the launch of `correlation`, kNoThread when none was read.
  uint32_t ThreadOf(int64_t correlation) const;
  // Finish() leaves each thread's top-level ops only, by start.
  void Finish();

  std::vector<std::string> names_;
  StringMap<uint32_t> name_ids_;
  std::vector<uint32_t> chunk_names_;    // Consume()'s scratch: the chunk's names to names_
  std::vector<uint32_t> chunk_threads_;  // and its threads to threads_
  StringMap<uint32_t> thread_ids_;
  std::vector<Thread> threads_;
  absl::flat_hash_map<int64_t, std::unique_ptr<uint32_t[]>> launch_threads_;  // by page
};

// AttributeCpuWaits() gives each device's idle split and each of its steps' (those recorded in
// timeline->cpu_wait_spans) and the timeline's over all devices their cpu_ops, from `cpu`; then
// frees the spans and `cpu`'s ops.
void AttributeCpuWaits(CpuOpsByThread* cpu, GpuTimeline* timeline);

}  // namespace tracefuse

#endif  // TRACEFUSE_REDUCE_CPU_WAIT_OPS_H_
