// `tracefuse merge`: reading status files and compare reports with simdjson On-Demand.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "simdjson.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/batch/summary.h"
#include "tracefuse/io/byte_source.h"

namespace tracefuse {
namespace {

namespace od = simdjson::ondemand;

constexpr size_t kReadPiece = size_t{1} << 20;

// TopLevelKeyFilter copies JSON text through, except the value of one top-level key, which
// becomes null. It follows strings (and their escapes) and bracket depth only: a malformed
// input stays malformed for the parser after it.
class TopLevelKeyFilter {
 public:
  explicit TopLevelKeyFilter(std::string_view dropped) : dropped_(dropped) {}

  void Feed(std::string_view piece, std::string* out) {
    for (char c : piece) {
      if (in_string_) {
        String(c);
      } else if (!Structural(c, out)) {
        continue;
      }
      if (!dropping_) out->push_back(c);
    }
  }

 private:
  void String(char c) {
    if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
    } else if (c == '"') {
      in_string_ = false;
      if (in_key_) matched_ = !dropped_.empty() && key_ == dropped_;
      in_key_ = false;
    } else if (in_key_ && key_.size() <= dropped_.size()) {
      key_.push_back(c);
    }
  }

  // Structural() follows `c` outside strings; false when `c` is not to be copied.
  bool Structural(char c, std::string* out) {
    switch (c) {
      case '"':
        in_string_ = true;
        in_key_ = depth_ == 1 && expect_key_;
        expect_key_ = false;
        key_.clear();
        break;
      case '{':
      case '[':
        expect_key_ = ++depth_ == 1 && c == '{';
        break;
      case '}':
      case ']':
        if (depth_-- == 1) dropping_ = false;
        break;
      case ',':
        if (depth_ == 1) expect_key_ = true, dropping_ = false;
        break;
      case ':':
        if (depth_ == 1 && matched_) {
          matched_ = false;
          out->append(":null");
          dropping_ = true;
          return false;
        }
        break;
      default:
        break;
    }
    return true;
  }

  std::string_view dropped_;
  std::string key_;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, in_key_ = false, expect_key_ = false;
  bool matched_ = false, dropping_ = false;
};

// ForEachKey() calls on_field(key, value) for each field of `object`, stopping at the first
// error (a malformed field, or one on_field returns); `*failed_key` is the field that failed.
template <typename OnField>
simdjson::error_code ForEachKey(od::object object, std::string* failed_key, OnField&& on_field) {
  simdjson::error_code err = simdjson::SUCCESS;
  for (auto field : object) {
    std::string_view key;
    od::value value;
    if ((err = field.unescaped_key().get(key))) return err;
    if ((err = field.value().get(value)) || (err = on_field(key, value))) {
      if (failed_key->empty()) failed_key->assign(key);  // the innermost field
      return err;
    }
  }
  return err;
}

template <typename OnField>
simdjson::error_code ForEachKey(od::value v, std::string* failed_key, OnField&& on_field) {
  od::object object;
  simdjson::error_code err = v.get_object().get(object);
  return err ? err : ForEachKey(object, failed_key, on_field);
}

template <typename OnElement>
simdjson::error_code ForEachElement(od::value v, OnElement&& on_element) {
  od::array array;
  simdjson::error_code err = v.get_array().get(array);
  for (auto element : array) {
    if (err) break;
    od::value value;
    if (!(err = element.get(value))) err = on_element(value);
  }
  return err;
}

// IsNull() says whether `v` is null, and consumes it if so.
bool IsNull(od::value v) {
  bool null = false;
  return v.is_null().get(null) == simdjson::SUCCESS && null;
}

// The readers of one field, into its place: null leaves the place as it is.
simdjson::error_code ReadString(od::value v, std::string* out) {
  if (IsNull(v)) return simdjson::SUCCESS;
  std::string_view s;
  simdjson::error_code err = v.get_string().get(s);
  if (!err) out->assign(s);
  return err;
}

template <typename T>
simdjson::error_code ReadNumber(od::value v, std::optional<T>* out) {
  if (IsNull(v)) return simdjson::SUCCESS;
  T n{};
  simdjson::error_code err = v.get(n);
  if (!err) *out = n;
  return err;
}

// A ratio: compare's JSON writes the reference's infinity as null.
simdjson::error_code ReadRatio(od::value v, double* out) {
  if (IsNull(v)) {
    *out = std::numeric_limits<double>::infinity();
    return simdjson::SUCCESS;
  }
  return v.get_double().get(*out);
}

// JsonDocument is a file's JSON text, padded for simdjson, and its On-Demand document.
struct JsonDocument {
  simdjson::padded_string text;
  od::parser parser;
  od::document doc;
  od::object root;
};

absl::Status Malformed(const std::string& path, std::string_view what) {
  return absl::InvalidArgumentError(StrCat(path, ": ", what));
}

// JsonError() names the file, and the field where there is one.
absl::Status JsonError(const std::string& path, simdjson::error_code err,
                       const std::string& failed_key) {
  std::string where = failed_key.empty() ? "" : StrCat(" in \"", failed_key, "\"");
  return Malformed(path, StrCat("malformed JSON", where, ": ", simdjson::error_message(err)));
}

// OpenJson() reads `path` without the value of its top-level key `dropped` and starts
// iterating its top-level object.
absl::Status OpenJson(const std::string& path, std::string_view dropped, JsonDocument* json) {
  absl::StatusOr<std::string> text = ReadJsonWithoutKey(path, dropped);
  if (!text.ok()) return text.status();
  json->text = simdjson::padded_string(*text);
  simdjson::error_code err = json->parser.iterate(json->text).get(json->doc);
  if (!err) err = json->doc.get_object().get(json->root);
  return err ? JsonError(path, err, "") : absl::OkStatus();
}

// CloseJson() checks that nothing follows the top-level object.
absl::Status CloseJson(const std::string& path, simdjson::error_code err,
                       const std::string& failed_key, JsonDocument* json) {
  if (err) return JsonError(path, err, failed_key);
  const char* location = nullptr;
  if (json->doc.current_location().get(location) != simdjson::OUT_OF_BOUNDS) {
    return Malformed(path, "malformed JSON: text after the top-level object");
  }
  return absl::OkStatus();
}

absl::StatusOr<PairState> StateFromName(std::string_view name) {
  for (PairState s : kPairStates) {
    if (s != PairState::kMissing && name == PairStateName(s)) return s;
  }
  return absl::InvalidArgumentError(
      StrCat("\"state\" is '", name, "', not running, complete, failed or interrupted"));
}

// TimelineReader reads a status file's "gpu_timeline": each side's devices' figures, summed, and
// its collectives. Valid JSON that is not such a timeline (a time negative or beyond a double, a
// name listed twice, columns of different lengths, a name index out of range) stops it with
// `problem` saying what is wrong.
class TimelineReader {
 public:
  explicit TimelineReader(std::string* failed_key) : failed_key_(failed_key) {}

  const std::string& problem() const { return problem_; }

  simdjson::error_code Read(od::value v, PerSide<std::optional<RankTimeline>>* timelines) {
    if (IsNull(v)) return simdjson::SUCCESS;
    return ForEachKey(v, failed_key_, [&](std::string_view key, od::value side) {
      if (key != "trace1" && key != "trace2") return simdjson::SUCCESS;
      side_ = key;
      return ReadSide(side, &(*timelines)[key == "trace1" ? Side::kTrace1 : Side::kTrace2]);
    });
  }

 private:
  simdjson::error_code Invalid(const std::string& what) {
    problem_ = StrCat("\"", side_, "\": ", what);
    return simdjson::INCORRECT_TYPE;
  }

  // Time() reads a time in µs: a number, at least 0, and a finite one.
  simdjson::error_code Time(od::value v, std::string_view key, double* us) {
    simdjson::error_code err = v.get_double().get(*us);
    if (!err && !(*us >= 0 && std::isfinite(*us))) {
      return Invalid(StrCat("\"", key, "\" is ", *us, ", not a time"));
    }
    return err;
  }

  simdjson::error_code ReadSide(od::value v, std::optional<RankTimeline>* out) {
    if (IsNull(v)) return simdjson::SUCCESS;
    RankTimeline timeline;
    simdjson::error_code err = ForEachKey(v, failed_key_, [&](std::string_view key, od::value f) {
      if (key == "devices") {
        ForEachRankFigure(timeline.figures, [](std::string_view, double* sum) { *sum = 0; });
        return ForEachElement(f, [&](od::value device) { return Device(device, &timeline); });
      }
      if (key == "steps") return Steps(f, &timeline.figures.step_us);
      if (key == "idle") return Idle(f, &timeline.figures.idle.emplace());
      return key == "collectives" ? Collectives(f, &timeline) : simdjson::SUCCESS;
    });
    if (err) return err;
    bool finite = true;
    ForEachRankFigure(timeline.figures,
                      [&](std::string_view, const double* sum) { finite &= std::isfinite(*sum); });
    if (!finite) return Invalid("its devices' times add up beyond a double");
    *out = std::move(timeline);
    return simdjson::SUCCESS;
  }

  simdjson::error_code Device(od::value v, RankTimeline* timeline) {
    RankFigures* sum = &timeline->figures;
    return ForEachKey(v, failed_key_, [&](std::string_view key, od::value figure) {
      double* into = nullptr;
      ForEachRankFigure(*sum, [&](std::string_view name, double* figure) {
        if (name == key) into = figure;
      });
      if (into == nullptr) return simdjson::SUCCESS;
      double us = 0;
      simdjson::error_code err = Time(figure, key, &us);
      *into += us;
      return err;
    });
  }

  // Idle() reads the idle split summed over the devices (GpuTimelineJson()'s "idle").
  simdjson::error_code Idle(od::value v, RankIdle* idle) {
    return ForEachKey(v, failed_key_, [&](std::string_view key, od::value figure) {
      double* into = nullptr;
      ForEachIdleCause(*idle, [&](std::string_view name, double* us) {
        if (name == key) into = us;
      });
      return into == nullptr ? simdjson::SUCCESS : Time(figure, key, into);
    });
  }

  // Steps() reads the step time, the steps' "median_span_us" (null without steps).
  simdjson::error_code Steps(od::value v, std::optional<double>* step_us) {
    return ForEachKey(v, failed_key_, [&](std::string_view key, od::value median) {
      if (key != "median_span_us" || IsNull(median)) return simdjson::SUCCESS;
      return Time(median, key, &step_us->emplace());
    });
  }

  // Collectives() reads CollectivesJson()'s columns into durations by name, in the order listed.
  simdjson::error_code Collectives(od::value v, RankTimeline* timeline) {
    std::vector<std::string> names;
    std::vector<uint64_t> name;
    std::vector<double> duration;
    simdjson::error_code err = ForEachKey(v, failed_key_, [&](std::string_view key, od::value c) {
      if (key == "names") {
        names.clear();
        return ForEachElement(c, [&](od::value n) { return ReadString(n, &names.emplace_back()); });
      }
      if (key == "name") {
        name.clear();
        return ForEachElement(c, [&](od::value n) { return n.get(name.emplace_back()); });
      }
      if (key != "duration_us") return simdjson::SUCCESS;
      duration.clear();
      return ForEachElement(c, [&](od::value d) { return Time(d, key, &duration.emplace_back()); });
    });
    if (err) return err;
    if (name.size() != duration.size()) {
      return Invalid(StrCat("\"collectives\": \"name\" has ", name.size(),
                            " entries and \"duration_us\" ", duration.size()));
    }
    absl::flat_hash_map<std::string_view, size_t> seen;
    for (const std::string& n : names) {
      if (!seen.emplace(n, seen.size()).second) {
        return Invalid(StrCat("\"collectives\": \"names\" lists '", n, "' twice"));
      }
      timeline->collectives.emplace_back(n, std::vector<double>());
    }
    for (size_t i = 0; i < name.size(); ++i) {
      if (name[i] >= names.size()) {
        return Invalid(
            StrCat("\"collectives\": name index ", name[i], " of ", names.size(), " names"));
      }
      timeline->collectives[name[i]].second.push_back(duration[i]);
    }
    return simdjson::SUCCESS;
  }

  std::string* failed_key_;
  std::string_view side_;
  std::string problem_;
};

simdjson::error_code StatusField(std::string_view key, od::value v, RecordedStatus* s,
                                 std::optional<std::string>* state, TimelineReader* timelines) {
  if (key == "state") {
    std::string_view name;
    simdjson::error_code err = v.get_string().get(name);
    if (!err) *state = std::string(name);
    return err;
  }
  if (key == "exit_code") return ReadNumber(v, &s->exit_code);
  if (key == "error") return ReadString(v, &s->error);
  if (key == "trace1") return ReadString(v, &s->trace1);
  if (key == "trace2") return ReadString(v, &s->trace2);
  if (key == "manifest") return ReadString(v, &s->manifest);
  if (key == "task") return ReadNumber(v, &s->task);
  if (key == "elapsed_seconds") return ReadNumber(v, &s->elapsed_seconds);
  if (key == "peak_rss_bytes") return ReadNumber(v, &s->peak_rss_bytes);
  if (key == "host") return ReadString(v, &s->host);
  if (key == "started_at") return ReadString(v, &s->started_at);
  if (key == "gpu_timeline") return timelines->Read(v, &s->timelines);
  return simdjson::SUCCESS;
}

// What a report's fields are read into.
struct ReportFields {
  MergedPair* pair;
  bool have_metadata = false, have_tracefuse = false;
  size_t traces = 0;
};

simdjson::error_code OpportunityField(std::string_view key, od::value v, MergedOpportunity* o,
                                      std::string* fused_by) {
  if (key == "kernel_type") return ReadString(v, &o->kernel_type);
  if (key == "fused_by") return ReadString(v, fused_by);
  if (key == "ratio") return ReadRatio(v, &o->ratio);
  return simdjson::SUCCESS;
}

simdjson::error_code ReadOpportunities(od::value v, std::vector<MergedOpportunity>* out,
                                       std::string* failed_key) {
  return ForEachElement(v, [&](od::value element) {
    MergedOpportunity o;
    std::string fused_by;
    simdjson::error_code err = ForEachKey(
        element, failed_key,
        [&](std::string_view k, od::value f) { return OpportunityField(k, f, &o, &fused_by); });
    if (err) return err;
    if (fused_by != ReferenceLabels()[Side::kTrace1] &&
        fused_by != ReferenceLabels()[Side::kTrace2]) {
      *failed_key = "fused_by";
      return simdjson::INCORRECT_TYPE;
    }
    o.fused_by = fused_by == ReferenceLabels()[Side::kTrace1] ? Side::kTrace1 : Side::kTrace2;
    out->push_back(std::move(o));
    return simdjson::SUCCESS;
  });
}

simdjson::error_code TraceField(std::string_view key, od::value v, MergedTrace* t,
                                std::string* failed_key) {
  if (key == "label") return ReadString(v, &t->label);
  if (key == "path" && t->path.empty()) return ReadString(v, &t->path);
  if (key == "platform") return ReadString(v, &t->platform);
  if (key == "gpu") return ReadString(v, &t->gpu);
  if (key == "kernels") return v.get_uint64().get(t->kernels);
  if (key == "kernel_time_us") return v.get_double().get(t->kernel_time_us);
  if (key != "kernel_time_us_by_category") return simdjson::SUCCESS;
  return ForEachKey(v, failed_key, [t](std::string_view category, od::value us) {
    double time = 0;
    simdjson::error_code err = us.get_double().get(time);
    if (!err) t->time_us_by_category.emplace_back(std::string(category), time);
    return err;
  });
}

simdjson::error_code TracefuseField(std::string_view key, od::value v, ReportFields* r,
                                    std::string* failed_key) {
  if (key == "rule_set") return ReadString(v, &r->pair->rule_set);
  if (key != "traces") return simdjson::SUCCESS;
  return ForEachElement(v, [r, failed_key](od::value element) {
    if (r->traces == 2) return simdjson::INCORRECT_TYPE;
    MergedTrace* t = &r->pair->traces[r->traces++];
    return ForEachKey(element, failed_key, [t, failed_key](std::string_view k, od::value f) {
      return TraceField(k, f, t, failed_key);
    });
  });
}

simdjson::error_code ReportField(std::string_view key, od::value v, ReportFields* r,
                                 std::string* failed_key) {
  if (key == "metadata") {
    return ForEachKey(v, failed_key, [r](std::string_view k, od::value f) {
      if (k != "matched_groups") return simdjson::SUCCESS;
      r->have_metadata = true;
      return f.get_uint64().get(r->pair->matched_groups);
    });
  }
  if (key == "fusion_opportunities")
    return ReadOpportunities(v, &r->pair->opportunities, failed_key);
  if (key != "tracefuse") return simdjson::SUCCESS;
  r->have_tracefuse = true;
  return ForEachKey(v, failed_key, [r, failed_key](std::string_view k, od::value f) {
    return TracefuseField(k, f, r, failed_key);
  });
}

// The readers of an ops report (`tracefuse ops --format json`).

// ReadDouble() reads a number, null as 0.
simdjson::error_code ReadDouble(od::value v, double* out) {
  std::optional<double> n;
  simdjson::error_code err = ReadNumber(v, &n);
  *out = n.value_or(0);
  return err;
}

// ReadSide() reads "trace1" or "trace2"; null leaves `out` empty.
simdjson::error_code ReadSide(od::value v, std::optional<Side>* out, std::string* failed_key,
                              std::string_view key) {
  if (IsNull(v)) return simdjson::SUCCESS;
  std::string side;
  if (simdjson::error_code err = ReadString(v, &side)) return err;
  if (side != "trace1" && side != "trace2") {
    *failed_key = key;
    return simdjson::INCORRECT_TYPE;
  }
  *out = side == "trace1" ? Side::kTrace1 : Side::kTrace2;
  return simdjson::SUCCESS;
}

// SideTime() reads a side's {"time_us": ...} into `out`.
simdjson::error_code SideTime(od::value v, double* out, std::string* failed_key) {
  return ForEachKey(v, failed_key, [out](std::string_view k, od::value f) {
    return k == "time_us" ? ReadDouble(f, out) : simdjson::SUCCESS;
  });
}

simdjson::error_code OpRow(od::value element, MergedOps* ops, std::string* failed_key) {
  OpTimes row;
  bool matched = false;
  simdjson::error_code err = ForEachKey(element, failed_key, [&](std::string_view k, od::value f) {
    if (k == "op") return ReadString(f, &row.op);
    if (k == "scope") return ReadString(f, &row.scope);
    if (k == "matched") return f.get_bool().get(matched);
    if (k == "instances") return f.get_uint64().get(row.instances);
    if (k == "trace1") return SideTime(f, &row.time_us[Side::kTrace1], failed_key);
    if (k == "trace2") return SideTime(f, &row.time_us[Side::kTrace2], failed_key);
    return simdjson::SUCCESS;
  });
  if (!err && matched) ops->ops.push_back(std::move(row));
  return err;
}

simdjson::error_code ExtraKernels(od::value v, OpFusionDifference* d, std::string* failed_key) {
  return ForEachElement(v, [&](od::value element) {
    std::pair<std::string, uint64_t> kernel;
    simdjson::error_code err =
        ForEachKey(element, failed_key, [&](std::string_view k, od::value f) {
          if (k == "name") return ReadString(f, &kernel.first);
          if (k == "count") return f.get_uint64().get(kernel.second);
          return simdjson::SUCCESS;
        });
    if (!err) d->extra_kernels.push_back(std::move(kernel));
    return err;
  });
}

simdjson::error_code FusionDifferenceField(std::string_view k, od::value f, OpFusionDifference* d,
                                           std::string* failed_key) {
  if (k == "kind") return ReadString(f, &d->kind);
  if (k == "scope") return ReadString(f, &d->scope);
  if (k == "op") return ReadString(f, &d->op);
  if (k == "relation") return ReadString(f, &d->relation);
  if (k == "fused_by") return ReadSide(f, &d->fused_by, failed_key, k);
  if (k == "fused_kernel") return ReadString(f, &d->fused_kernel);
  if (k == "instances") return f.get_uint64().get(d->instances);
  if (k == "extra_time_us") return ReadDouble(f, &d->extra_time_us);
  if (k == "saving_us") return ReadDouble(f, &d->saving_us);
  if (k == "extra_kernels") return ExtraKernels(f, d, failed_key);
  if (k == "trace1") return SideTime(f, &d->time_us[Side::kTrace1], failed_key);
  if (k == "trace2") return SideTime(f, &d->time_us[Side::kTrace2], failed_key);
  return simdjson::SUCCESS;
}

simdjson::error_code OpsTrace(od::value element, size_t* traces, MergedOps* ops,
                              std::string* failed_key) {
  if (*traces == 2) return simdjson::INCORRECT_TYPE;
  const Side side = (*traces)++ == 0 ? Side::kTrace1 : Side::kTrace2;
  return ForEachKey(element, failed_key, [&](std::string_view k, od::value f) {
    if (k == "kernel_time_us") return ReadDouble(f, &ops->kernel_time_us[side]);
    if (k == "linked_kernel_time_us") return ReadDouble(f, &ops->linked_kernel_time_us[side]);
    return simdjson::SUCCESS;
  });
}

}  // namespace

absl::StatusOr<MergedOps> ReadPairOps(const std::string& path) {
  JsonDocument json;
  // Its largest value, and the only one not summed.
  if (absl::Status opened = OpenJson(path, "top_instances", &json); !opened.ok()) return opened;
  MergedOps ops;
  ops.file = path;
  std::string schema, failed_key;
  size_t traces = 0;
  simdjson::error_code err =
      ForEachKey(json.root, &failed_key, [&](std::string_view key, od::value v) {
        if (key == "schema") return ReadString(v, &schema);
        if (key == "traces") {
          return ForEachElement(
              v, [&](od::value t) { return OpsTrace(t, &traces, &ops, &failed_key); });
        }
        if (key == "ops") {
          return ForEachElement(v, [&](od::value row) { return OpRow(row, &ops, &failed_key); });
        }
        if (key != "fusion_differences") return simdjson::SUCCESS;
        return ForEachElement(v, [&](od::value element) {
          OpFusionDifference& d = ops.fusion_differences.emplace_back();
          return ForEachKey(element, &failed_key, [&](std::string_view k, od::value f) {
            return FusionDifferenceField(k, f, &d, &failed_key);
          });
        });
      });
  if (absl::Status closed = CloseJson(path, err, failed_key, &json); !closed.ok()) return closed;
  if (schema != "tracefuse.ops/1" || traces != 2) {
    return Malformed(path, "not a tracefuse ops report (\"schema\": \"tracefuse.ops/1\")");
  }
  return ops;
}

absl::StatusOr<std::string> ReadJsonWithoutKey(const std::string& path, std::string_view dropped) {
  SourceOptions options;
  options.window_bytes = kReadPiece;
  absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenSource(path, options);
  if (!source.ok()) return source.status();
  TopLevelKeyFilter filter(dropped);
  std::string out;
  Block block;
  while (true) {
    absl::StatusOr<bool> more = (*source)->Next(&block);
    if (!more.ok()) return more.status();
    if (!*more) break;
    filter.Feed(std::string_view(block.data, block.size), &out);
  }
  return out;
}

absl::StatusOr<RecordedStatus> ReadPairStatus(const std::string& path) {
  JsonDocument json;
  if (absl::Status opened = OpenJson(path, "", &json); !opened.ok()) return opened;
  RecordedStatus status;
  std::optional<std::string> state;
  std::string failed_key;
  TimelineReader timelines(&failed_key);
  simdjson::error_code err =
      ForEachKey(json.root, &failed_key, [&](std::string_view key, od::value v) {
        return StatusField(key, v, &status, &state, &timelines);
      });
  if (!timelines.problem().empty()) {
    return Malformed(path, StrCat("\"gpu_timeline\": ", timelines.problem()));
  }
  if (absl::Status closed = CloseJson(path, err, failed_key, &json); !closed.ok()) return closed;
  if (!state) return Malformed(path, "no \"state\"");
  absl::StatusOr<PairState> s = StateFromName(*state);
  if (!s.ok()) return Malformed(path, std::string(s.status().message()));
  status.state = *s;
  return status;
}

absl::Status ReadPairReport(const std::string& path, MergedPair* pair) {
  JsonDocument json;
  if (absl::Status opened = OpenJson(path, "fusion_mappings", &json); !opened.ok()) return opened;
  ReportFields fields{pair};
  std::string failed_key;
  simdjson::error_code err = ForEachKey(
      json.root, &failed_key,
      [&](std::string_view key, od::value v) { return ReportField(key, v, &fields, &failed_key); });
  if (absl::Status closed = CloseJson(path, err, failed_key, &json); !closed.ok()) return closed;
  if (!fields.have_metadata) return Malformed(path, "no \"metadata\".\"matched_groups\"");
  if (!fields.have_tracefuse || fields.traces != 2) {
    return Malformed(path,
                     "no \"tracefuse\".\"traces\" with both traces (not a tracefuse compare "
                     "report?)");
  }
  pair->has_report = true;
  return absl::OkStatus();
}

}  // namespace tracefuse
