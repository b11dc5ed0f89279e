#include "imported_chunk.h"

#include <string>

#include "tracefuse/base/strings.h"

namespace tracefuse {

std::string_view OperatorName(std::string_view text) {
  for (size_t at = text.find(", "); at != std::string_view::npos; at = text.find(", ", at + 2)) {
    const std::string_view field = text.substr(at + 2);
    for (std::string_view key : {"seq = ", "op_id = ", "sizes = ", "input_op_ids = "}) {
      if (field.substr(0, key.size()) == key) return text.substr(0, at);
    }
  }
  return text;
}

void ImportedChunk::Start(ParsedChunk* chunk, uint64_t seq) {
  chunk_ = chunk;
  chunk_->Clear();
  chunk_->seq = seq;
  kernel_names_.clear();
  api_names_.clear();
  threads_.clear();
  host_names_.clear();
  transfer_names_[0] = transfer_names_[1] = kUnnamed;
  kernels_ = memcpys_ = memsets_ = launches_ = annotations_ = operators_ = graph_replays_ = 0;
}

uint32_t ImportedChunk::Thread(HostThread thread) {
  auto [it, inserted] = threads_.try_emplace(std::pair(thread.pid, thread.tid), 0);
  if (inserted) {
    it->second = chunk_->host.threads.Append(StrCat(thread.pid, "\t", thread.tid));
  }
  return it->second;
}

uint32_t ImportedChunk::HostName(std::string_view name) {
  auto [it, inserted] = host_names_.try_emplace(name, 0);
  if (inserted) it->second = chunk_->host.names.Append(name);
  return it->second;
}

void ImportedChunk::AddRange(int64_t start_ns, int64_t end_ns, std::string_view text,
                             HostThread thread) {
  const std::string_view name = OperatorName(text);
  const bool step = IsStepAnnotation(name);
  const HostOpKind kind = step                                        ? HostOpKind::kStep
                          : name.find("::") != std::string_view::npos ? HostOpKind::kOperator
                                                                      : HostOpKind::kAnnotation;
  if (step) {
    chunk_->steps.push_back(
        StepAnnotation{start_ns, end_ns - start_ns, chunk_->step_names.Append(name)});
  }
  if (host_activity_) {
    HostOp& op = chunk_->host.ops.emplace_back();
    op.ts_ns = start_ns;
    op.dur_ns = end_ns - start_ns;
    op.thread = Thread(thread);
    op.name = HostName(name);
    op.kind = kind;
    op.position = static_cast<uint32_t>(records());
  }
  ++(kind == HostOpKind::kOperator ? operators_ : annotations_);
}

void ImportedChunk::Finish() {
  chunk_->events = records();
  for (auto [category, count] :
       {std::pair{kKernelCategory, kernels_}, std::pair{kMemcpyCategory, memcpys_},
        std::pair{kMemsetCategory, memsets_}, std::pair{kRuntimeCategory, launches_},
        std::pair{kAnnotationCategory, annotations_}, std::pair{kOperatorCategory, operators_},
        std::pair{kGraphReplayCategory, graph_replays_}}) {
    if (count > 0) chunk_->categories.emplace_back(std::string(category), count);
  }
}

}  // namespace tracefuse
