// tracefuse._core: the native half of the Python module (python/tracefuse/__init__.py is the
// other). It calls the same library as the command line: each function streams traces through
// the pipeline with the GIL released and returns the report as the CLI's JSON text, which the
// Python half parses: json.loads keeps key order and int/float exactly, and reads the Infinity
// that the fusion report is written with here as float('inf'). Errors become exceptions carrying
// the CLI's one-line message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/batch/compare.h"
#include "tracefuse/classify/classifier.h"
#include "tracefuse/io/byte_source.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/report/breakdown.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/ops.h"
#include "tracefuse/report/stats.h"

namespace py = pybind11;

namespace tracefuse::python {
namespace {

// The module's exception classes, made at import (see PYBIND11_MODULE below).
struct ExceptionTypes {
  PyObject* trace = nullptr;        // TraceError(ValueError)
  PyObject* malformed = nullptr;    // MalformedTraceError(TraceError)
  PyObject* unsupported = nullptr;  // UnsupportedTraceError(TraceError)
  PyObject* rule_set = nullptr;     // RuleSetError(ValueError)
};
ExceptionTypes exceptions;

// What failed, which picks the exception class for a status that is not an I/O error.
enum class Failed : uint8_t { kReadingTraces, kLoadingRules, kLoadingGpuSpecs };

// Raise() throws the Python exception for `status`: OSError with an errno for what the CLI exits 3
// for, else the class of what failed. The message is the CLI's line without "tracefuse: error: ".
[[noreturn]] void Raise(const absl::Status& status, Failed failed) {
  const std::string message = ReadErrorMessage(status);
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnimplemented: {
      PyObject* type = failed == Failed::kLoadingRules      ? exceptions.rule_set
                       : failed == Failed::kLoadingGpuSpecs ? PyExc_ValueError
                       : IsUnsupportedTrace(status)         ? exceptions.unsupported
                                                            : exceptions.malformed;
      PyErr_SetString(type, message.c_str());
      throw py::error_already_set();
    }
    case absl::StatusCode::kCancelled:
      PyErr_SetString(PyExc_KeyboardInterrupt, message.c_str());
      throw py::error_already_set();
    default: {
      // OSError(errno, message) is constructed as its errno's subclass: FileNotFoundError, ...
      const int err = status.code() == absl::StatusCode::kNotFound           ? ENOENT
                      : status.code() == absl::StatusCode::kPermissionDenied ? EACCES
                                                                             : EIO;
      PyErr_SetObject(PyExc_OSError, py::make_tuple(err, message).ptr());
      throw py::error_already_set();
    }
  }
}

std::shared_ptr<const Classifier> Rules(const std::string& ruleset) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier;
  {
    py::gil_scoped_release released;
    classifier = LoadClassifier(ruleset);
  }
  if (!classifier.ok() && RuleSet::NamesBuiltin(ruleset)) {
    // No such built-in set: a bad argument, not a missing file.
    PyErr_SetString(exceptions.rule_set, std::string(classifier.status().message()).c_str());
    throw py::error_already_set();
  }
  if (!classifier.ok()) Raise(classifier.status(), Failed::kLoadingRules);
  return *std::move(classifier);
}

// ReadOptions are the options of every function that reads traces.
struct ReadOptions {
  int threads = 0;  // 0: DefaultThreadCount()
  bool lenient = false;
  uint64_t max_event_bytes = kDefaultMaxEventBytes;
  py::object progress;  // None, or called as progress(bytes_read, bytes_total)
};

// Progress calls the user's callback from the reading stage, at most ten times a second, with
// the GIL held. An exception it raises is kept, further calls are skipped, and Rethrow() raises
// it once the traces are read: no result is returned past a failed callback.
class Progress {
 public:
  explicit Progress(py::object callback) : callback_(std::move(callback)) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Install(PipelineOptions* options) {
    if (callback_.is_none()) return;
    options->progress = [this](const ProgressUpdate& update) { Report(update); };
  }

  void Rethrow() {
    if (!error_) return;
    error_->restore();
    error_.reset();
    throw py::error_already_set();
  }

 private:
  static constexpr auto kInterval = std::chrono::milliseconds(100);

  void Report(const ProgressUpdate& update) {
    const auto now = std::chrono::steady_clock::now();
    const bool last =
        update.file_bytes_total > 0 && update.file_bytes_read >= update.file_bytes_total;
    if (failed_.load() || (!last && now - last_call_.load() < kInterval)) return;
    last_call_ = now;
    py::gil_scoped_acquire gil;
    if (error_) return;
    try {
      callback_(update.file_bytes_read, update.file_bytes_total);
    } catch (py::error_already_set& e) {
      error_.emplace(std::move(e));
      failed_ = true;
    }
  }

  py::object callback_;
  std::optional<py::error_already_set> error_;  // touched with the GIL held only
  std::atomic<bool> failed_{false};
  std::atomic<std::chrono::steady_clock::time_point> last_call_{};
};

PipelineOptions Pipeline(const ReadOptions& read, bool keep_kernel_records) {
  PipelineOptions options;
  options.threads = read.threads;
  options.salvage_truncated = read.lenient;
  options.max_event_bytes = read.max_event_bytes;
  options.keep_kernel_records = keep_kernel_records;
  return options;
}

// ProfileOne() streams one trace (stats, breakdown) with the GIL released; `step_figures`: as
// `stats --format json`, which lists each step; `host_activity`: with its CPU side (--by-op);
// `by_launching_op`: names no rule matches classified by their launching ops (not --name-only).
TraceProfile ProfileOne(const std::string& path, const std::string& ruleset,
                        const ReadOptions& read, bool step_figures = false,
                        bool host_activity = false, bool by_launching_op = false) {
  std::shared_ptr<const Classifier> classifier = Rules(ruleset);
  // The CPU side links kernels to ops: it needs the kernel records.
  PipelineOptions options = Pipeline(read, /*keep_kernel_records=*/host_activity);
  options.step_figures = step_figures;
  options.host_activity = host_activity;
  options.classify_by_launching_op = by_launching_op;
  Progress progress(read.progress);
  progress.Install(&options);
  absl::StatusOr<std::vector<TraceProfile>> profiles;
  {
    py::gil_scoped_release released;
    profiles = ProfileTraces({path}, classifier, options);
  }
  progress.Rethrow();
  if (!profiles.ok()) Raise(profiles.status(), Failed::kReadingTraces);
  return std::move(profiles->front());
}

// HashOrderDict() is the report's HashOrderInputs with types named, and which opportunities
// the matched groups gave (the others come from the whole traces), for the Python half's replay
// of the reference's set iterations.
py::dict HashOrderDict(const FusionReport& report) {
  auto names = [&](const std::vector<CategoryId>& types) {
    py::list list;
    for (CategoryId t : types) list.append(report.categories[t]);
    return list;
  };
  auto per_side = [&](const PerSide<std::vector<CategoryId>>& types) {
    return py::make_tuple(names(types[Side::kTrace1]), names(types[Side::kTrace2]));
  };
  const HashOrderInputs& inputs = report.hash_order_inputs;
  py::list pairs, from_groups;
  for (size_t i = 0; i < inputs.pair_types.size(); ++i) {
    const auto& [cg1, cg2] = inputs.pair_correlations[i];
    pairs.append(py::make_tuple(cg1, cg2, per_side(inputs.pair_types[i])));
  }
  for (const FusionOpportunity& o : report.opportunities) from_groups.append(o.from_groups);
  py::dict dict;
  dict["trace_types"] = per_side(inputs.trace_types);
  dict["ts_types"] = per_side(inputs.ts_types);
  dict["matched_types"] = per_side(inputs.matched_types);
  dict["pairs"] = pairs;
  dict["from_groups"] = from_groups;
  return dict;
}

// Compare() is compare's JSON text; with `hash_order`, the pair (JSON, HashOrderDict()); with
// `by_op`, as `compare --by-op`.
py::object Compare(const std::string& trace1, const std::string& trace2, const std::string& ruleset,
                   uint32_t min_group_size, const std::string& label1, const std::string& label2,
                   bool hash_order, bool name_only, bool by_op, const ReadOptions& read) {
  std::shared_ptr<const Classifier> classifier = Rules(ruleset);
  PipelineOptions options = Pipeline(read, /*keep_kernel_records=*/true);
  options.classify_by_launching_op = !name_only;
  Progress progress(read.progress);
  progress.Install(&options);
  CompareOptions compare;
  compare.ruleset = ruleset;
  compare.min_group_size = min_group_size;
  compare.label1 = label1;
  compare.label2 = label2;
  compare.by_op = by_op;
  FusionOptions fusion;
  fusion.min_group_size = min_group_size;
  fusion.hash_order_inputs = hash_order;
  const OpCompareOptions op_options;
  absl::StatusOr<Comparison> comparison;
  std::string json;
  {
    py::gil_scoped_release released;
    comparison =
        CompareTraces(trace1, trace2, classifier, options, fusion, by_op ? &op_options : nullptr);
    if (comparison.ok()) {
      json = FusionJson(comparison->report, ComparisonContext(*comparison, compare),
                        JsonInfinity::kLiteral);
    }
  }
  progress.Rethrow();
  if (!comparison.ok()) Raise(comparison.status(), Failed::kReadingTraces);
  if (!hash_order) return py::str(json);
  return py::make_tuple(json, HashOrderDict(comparison->report));
}

// OpsJsonText() is `ops --format json` of the two traces.
std::string OpsJsonText(const std::string& trace1, const std::string& trace2,
                        const std::string& ruleset, size_t top, uint32_t max_edit_distance,
                        const std::string& label1, const std::string& label2,
                        const std::string& gpu_spec, const ReadOptions& read) {
  std::shared_ptr<const Classifier> classifier = Rules(ruleset);
  std::optional<GpuSpecs> gpu_specs;
  if (!gpu_spec.empty()) {
    absl::StatusOr<GpuSpecs> loaded = LoadGpuSpecs(gpu_spec);
    if (!loaded.ok()) Raise(loaded.status(), Failed::kLoadingGpuSpecs);
    gpu_specs = WithBuiltinGpuSpecs(*std::move(loaded));
  }
  // By kernel names alone, as `ops` classifies (its oracle does too).
  PipelineOptions options = Pipeline(read, /*keep_kernel_records=*/true);
  Progress progress(read.progress);
  progress.Install(&options);
  OpCompareOptions compare;
  compare.top_instances = top;
  compare.edit_cap = max_edit_distance;
  if (gpu_specs) compare.gpu_specs = &*gpu_specs;
  absl::StatusOr<OperatorComparison> c;
  std::string json;
  {
    py::gil_scoped_release released;
    c = CompareOperators(trace1, trace2, classifier, options, compare);
    if (c.ok()) {
      OpsContext context;
      const PerSide<TraceProfile>& traces = c->traces;
      context.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
      context.labels =
          ComparisonLabels(traces[Side::kTrace1], traces[Side::kTrace2], label1, label2);
      context.top = top;
      context.read_seconds = c->read_seconds;
      context.analyze_seconds = c->analyze_seconds;
      json = OpsJson(c->ops, context);
    }
  }
  progress.Rethrow();
  if (!c.ok()) Raise(c.status(), Failed::kReadingTraces);
  json.pop_back();  // the newline that ends the file
  return json;
}

std::string StatsJsonText(const std::string& path, const std::string& ruleset,
                          const ReadOptions& read) {
  const auto started = std::chrono::steady_clock::now();
  const TraceProfile profile = ProfileOne(path, ruleset, read, /*step_figures=*/true);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string json = StatsJson(profile, elapsed);
  json.pop_back();  // the newline that ends the file
  return json;
}

// BreakdownJsonText() is `breakdown --format json`, with `by_op` each category's TFLOP/s.
std::string BreakdownJsonText(const std::string& path, const std::string& ruleset, size_t top,
                              bool by_op, bool name_only, const ReadOptions& read) {
  TraceProfile profile = ProfileOne(path, ruleset, read, /*step_figures=*/false, by_op,
                                    /*by_launching_op=*/!name_only);
  if (!by_op) return BreakdownJson(profile, top);
  const OpTree tree = TakeOpTree(&profile);
  const std::vector<CategoryWork> work = CategoryWorkOf(profile, tree, WorkOfSets(tree));
  return BreakdownJson(profile, top, &work);
}

Platform ParsePlatform(const std::optional<std::string>& platform) {
  if (!platform) return Platform::kUnknown;
  if (*platform == "amd") return Platform::kAmd;
  if (*platform == "nvidia") return Platform::kNvidia;
  throw py::value_error("platform must be None, 'amd' or 'nvidia', not '" + *platform + "'");
}

// RuleSetHandle is tracefuse.RuleSet: a built-in set or a rule file, loaded and compiled.
class RuleSetHandle {
 public:
  explicit RuleSetHandle(std::string name_or_path)
      : source_(std::move(name_or_path)), classifier_(Rules(source_)) {}

  const RuleSet& rules() const { return classifier_->rule_set(); }
  const std::string& source() const { return source_; }

  // Check() loads the set again (a rule file may have changed) and says what `rules --check`
  // says.
  std::string Check() {
    classifier_ = Rules(source_);
    return source_ + ": OK (" + std::to_string(rules().rules().size()) + " rules, " +
           std::to_string(rules().categories().size()) + " categories)";
  }

  // Classify() is, per name, its category and its rule's pattern label (None when the rule
  // has none).
  std::vector<std::pair<std::string, std::optional<std::string>>> Classify(
      const std::vector<std::string>& names, const std::optional<std::string>& platform) const {
    CachedClassifier cached(classifier_, ParsePlatform(platform));
    std::vector<std::pair<std::string, std::optional<std::string>>> out;
    out.reserve(names.size());
    for (const std::string& name : names) {
      const RuleId id = cached.Classify(name);
      std::string pattern = classifier_->Pattern(id, name);
      out.emplace_back(classifier_->category_name(classifier_->category_of(id)),
                       pattern.empty() ? std::nullopt : std::optional(std::move(pattern)));
    }
    return out;
  }

 private:
  std::string source_;
  std::shared_ptr<const Classifier> classifier_;
};

PyObject* NewException(py::module_& m, const char* name, PyObject* base, const char* doc) {
  PyObject* type =
      PyErr_NewExceptionWithDoc((std::string("tracefuse.") + name).c_str(), doc, base, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

void DeclareExceptions(py::module_& m) {
  exceptions.trace = NewException(m, "TraceError", PyExc_ValueError,
                                  "A trace tracefuse cannot read (the CLI's exit code 1).");
  exceptions.malformed =
      NewException(m, "MalformedTraceError", exceptions.trace,
                   "Malformed or truncated JSON; the message names the file and the byte offset.");
  exceptions.unsupported = NewException(m, "UnsupportedTraceError", exceptions.trace,
                                        "Well-formed input that is not a Kineto trace.");
  exceptions.rule_set = NewException(m, "RuleSetError", PyExc_ValueError,
                                     "A rule file that does not load, or an unknown rule set; "
                                     "the message gives the file and line.");
}

ReadOptions Read(int threads, bool lenient, uint64_t max_event_bytes, py::object progress) {
  if (threads < 0) throw py::value_error("threads must be positive, or None for all CPUs");
  if (!progress.is_none() && !PyCallable_Check(progress.ptr())) {
    throw py::type_error("progress must be callable as progress(bytes_read, bytes_total)");
  }
  return {threads, lenient, max_event_bytes, std::move(progress)};
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tracefuse's native functions; use the tracefuse package, not this module.";
  m.attr("__version__") = TRACEFUSE_VERSION;
  m.attr("DEFAULT_MAX_EVENT_BYTES") = kDefaultMaxEventBytes;
  DeclareExceptions(m);
  m.def(
      "compare_json",
      [](const std::string& t1, const std::string& t2, const std::string& ruleset,
         uint32_t min_group_size, const std::string& label1, const std::string& label2,
         bool hash_order, bool name_only, bool by_op, int threads, bool lenient,
         uint64_t max_event_bytes, py::object progress) {
        return Compare(t1, t2, ruleset, min_group_size, label1, label2, hash_order, name_only,
                       by_op, Read(threads, lenient, max_event_bytes, std::move(progress)));
      },
      py::arg("trace1"), py::arg("trace2"), py::arg("ruleset"), py::arg("min_group_size"),
      py::arg("label1"), py::arg("label2"), py::arg("hash_order"), py::arg("name_only"),
      py::arg("by_op"), py::arg("threads"), py::arg("lenient"), py::arg("max_event_bytes"),
      py::arg("progress"));
  m.def(
      "ops_json",
      [](const std::string& t1, const std::string& t2, const std::string& ruleset, size_t top,
         uint32_t max_edit_distance, const std::string& label1, const std::string& label2,
         const std::string& gpu_spec, int threads, bool lenient, uint64_t max_event_bytes,
         py::object progress) {
        return OpsJsonText(t1, t2, ruleset, top, max_edit_distance, label1, label2, gpu_spec,
                           Read(threads, lenient, max_event_bytes, std::move(progress)));
      },
      py::arg("trace1"), py::arg("trace2"), py::arg("ruleset"), py::arg("top"),
      py::arg("max_edit_distance"), py::arg("label1"), py::arg("label2"), py::arg("gpu_spec"),
      py::arg("threads"), py::arg("lenient"), py::arg("max_event_bytes"), py::arg("progress"));
  m.def(
      "stats_json",
      [](const std::string& path, const std::string& ruleset, int threads, bool lenient,
         uint64_t max_event_bytes, py::object progress) {
        return StatsJsonText(path, ruleset,
                             Read(threads, lenient, max_event_bytes, std::move(progress)));
      },
      py::arg("path"), py::arg("ruleset"), py::arg("threads"), py::arg("lenient"),
      py::arg("max_event_bytes"), py::arg("progress"));
  m.def(
      "breakdown_json",
      [](const std::string& path, const std::string& ruleset, size_t top, bool by_op,
         bool name_only, int threads, bool lenient, uint64_t max_event_bytes, py::object progress) {
        return BreakdownJsonText(path, ruleset, top, by_op, name_only,
                                 Read(threads, lenient, max_event_bytes, std::move(progress)));
      },
      py::arg("path"), py::arg("ruleset"), py::arg("top"), py::arg("by_op"), py::arg("name_only"),
      py::arg("threads"), py::arg("lenient"), py::arg("max_event_bytes"), py::arg("progress"));
  py::class_<RuleSetHandle>(m, "RuleSet")
      .def(py::init<std::string>(), py::arg("name_or_path"))
      .def_property_readonly("name", [](const RuleSetHandle& r) { return r.rules().name(); })
      .def_property_readonly("source", &RuleSetHandle::source)
      .def_property_readonly("description",
                             [](const RuleSetHandle& r) { return r.rules().description(); })
      .def_property_readonly("categories",
                             [](const RuleSetHandle& r) { return r.rules().categories(); })
      .def("__len__", [](const RuleSetHandle& r) { return r.rules().rules().size(); })
      .def("check", &RuleSetHandle::Check)
      .def("classify", &RuleSetHandle::Classify, py::arg("names"), py::arg("platform") = py::none())
      .def("__repr__", [](const RuleSetHandle& r) {
        return "tracefuse.RuleSet('" + r.source() +
               "': " + std::to_string(r.rules().rules().size()) + " rules, " +
               std::to_string(r.rules().categories().size()) + " categories)";
      });
}

}  // namespace tracefuse::python
