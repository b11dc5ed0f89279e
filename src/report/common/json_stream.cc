#include "report/common/json_stream.h"

namespace tracefuse {

absl::Status JsonStream::MaybeFlush() {
  if (sink_ == nullptr || out_->size() < kFlushBytes) return absl::OkStatus();
  absl::Status st = sink_->Append(*out_);
  out_->clear();
  return st;
}

// Items go on lines of their own, indented two spaces a level, as nlohmann's dump(2) puts them.
void JsonStream::NextItem() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (has_items_.empty()) return;
  if (has_items_.back()) *out_ += ',';
  has_items_.back() = true;
  *out_ += '\n';
  out_->append(2 * has_items_.size(), ' ');
}

void JsonStream::Open(char bracket) {
  NextItem();
  *out_ += bracket;
  has_items_.push_back(false);
}

void JsonStream::Close(char bracket) {
  const bool any = has_items_.back();
  has_items_.pop_back();
  if (any) {
    *out_ += '\n';
    out_->append(2 * has_items_.size(), ' ');
  }
  *out_ += bracket;
}

void JsonStream::Key(std::string_view key) {
  NextItem();
  *out_ += DumpJson(Json(key));
  *out_ += ": ";
  after_key_ = true;
}

void JsonStream::Value(const Json& value) {
  NextItem();
  const std::string text = DumpJson(value);
  const std::string indent(2 * has_items_.size(), ' ');
  size_t from = 0;
  for (size_t newline = text.find('\n'); newline != std::string::npos;
       newline = text.find('\n', from)) {
    out_->append(text, from, newline + 1 - from);
    *out_ += indent;
    from = newline + 1;
  }
  out_->append(text, from);
}

void JsonStream::Fields(const Json& object) {
  for (const auto& [key, value] : object.items()) Field(key, value);
}

}  // namespace tracefuse
