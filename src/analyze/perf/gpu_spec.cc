#include "tracefuse/analyze/gpu_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "analyze/perf/embedded_gpus.h"
#include "fmt/format.h"
#include "tracefuse/base/strings.h"
#include "yaml-cpp/yaml.h"

namespace tracefuse {
namespace {

constexpr std::array<std::string_view, kDTypes> kDTypeNames = {"",     "fp64", "fp32", "tf32",
                                                               "bf16", "fp16", "fp8",  "int8"};
constexpr std::string_view kTopKeys[] = {"gpus"};
constexpr std::string_view kRowKeys[] = {"name", "match", "source", "tflops", "hbm_tb_per_s"};

// Shown() is a node as an error quotes it: a scalar's text, or what it is instead.
std::string Shown(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.IsNull()) return "null";
  return StrCat("'", EscapedControls(node.Scalar()), "'");
}

bool IsNonEmptyString(const YAML::Node& node) {
  return node && node.IsScalar() && !node.Scalar().empty();
}

bool HasUpper(std::string_view text) {
  for (const char c : text)
    if (absl::ascii_isupper(static_cast<unsigned char>(c))) return true;
  return false;
}

absl::Status Invalid(const std::string& where, std::string_view what) {
  return absl::InvalidArgumentError(StrCat(where, ": ", what));
}

// CheckKeys() rejects a key of `map` that `allowed` does not list, and a key given twice (yaml-cpp
// keeps both, and a lookup would silently take the first). `map_name` names a nested map in the
// message ("in 'tflops'").
absl::Status CheckKeys(const YAML::Node& map, absl::Span<const std::string_view> allowed,
                       const std::string& where, std::string_view map_name = "") {
  const std::string in = map_name.empty() ? "" : StrCat(" in '", map_name, "'");
  std::vector<std::string_view> seen;
  for (const auto& entry : map) {
    const YAML::Node& key = entry.first;
    const auto known =
        std::find(allowed.begin(), allowed.end(), key.IsScalar() ? key.Scalar() : std::string());
    if (known == allowed.end()) {
      return Invalid(
          where, fmt::format("unknown key {}{} ({})", Shown(key), in, fmt::join(allowed, ", ")));
    }
    if (std::find(seen.begin(), seen.end(), *known) != seen.end()) {
      return Invalid(where, StrCat("'", *known, "' given twice", in));
    }
    seen.push_back(*known);
  }
  return absl::OkStatus();
}

// ReadFigure() reads a peak: null for none, else a positive finite number.
absl::StatusOr<std::optional<double>> ReadFigure(const YAML::Node& node, const std::string& where,
                                                 std::string_view label) {
  if (node.IsNull()) return std::nullopt;
  double value = 0;
  if (!YAML::convert<double>::decode(node, value) || !std::isfinite(value) || value <= 0) {
    return Invalid(where, StrCat(label, " is ", Shown(node), ", not a positive number (or null)"));
  }
  return value;
}

absl::Status ReadMatch(const YAML::Node& row, const std::string& where, GpuPeak* gpu) {
  const YAML::Node match = row["match"];
  constexpr std::string_view kShape = "'match' is a non-empty list of non-empty strings";
  if (!match || !match.IsSequence() || match.size() == 0) return Invalid(where, kShape);
  for (const auto& entry : match) {
    if (!IsNonEmptyString(entry)) return Invalid(where, kShape);
    if (HasUpper(entry.Scalar())) {
      return Invalid(where,
                     StrCat("match ", Shown(entry),
                            " has upper-case letters (device names are matched lower-cased)"));
    }
    gpu->match.push_back(entry.Scalar());
  }
  return absl::OkStatus();
}

absl::Status ReadTflops(const YAML::Node& row, const std::string& where, GpuPeak* gpu) {
  const YAML::Node tflops = row["tflops"];
  if (!tflops) return absl::OkStatus();
  if (!tflops.IsMap()) return Invalid(where, "'tflops' is a map from element type to TFLOP/s");
  // Every element type but kUnknown's "".
  absl::Status keys =
      CheckKeys(tflops, absl::MakeConstSpan(kDTypeNames).subspan(1), where, "tflops");
  if (!keys.ok()) return keys;
  for (size_t type = 1; type < kDTypes; ++type) {
    const std::string key(kDTypeNames[type]);
    const YAML::Node figure = tflops[key];
    if (!figure) continue;
    absl::StatusOr<std::optional<double>> value = ReadFigure(figure, where, StrCat("tflops.", key));
    if (!value.ok()) return value.status();
    gpu->tflops[type] = *value;
  }
  return absl::OkStatus();
}

// ReadRow() reads gpus[index]; errors name the row by index and, once read, by name.
absl::StatusOr<GpuPeak> ReadRow(const YAML::Node& row, size_t index,
                                const std::string& display_name) {
  std::string where = StrCat(display_name, ": gpus[", index, "]");
  if (!row.IsMap()) {
    return Invalid(where, StrCat("a GPU is a map with 'name', 'match', 'source', 'tflops' and ",
                                 "'hbm_tb_per_s'"));
  }
  if (!IsNonEmptyString(row["name"])) return Invalid(where, "'name' is a non-empty string");
  GpuPeak gpu;
  gpu.name = row["name"].Scalar();
  where = StrCat(where, " (", EscapedControls(gpu.name), ")");
  absl::Status st = CheckKeys(row, kRowKeys, where);
  if (st.ok()) st = ReadMatch(row, where, &gpu);
  if (!st.ok()) return st;
  if (!IsNonEmptyString(row["source"])) {
    return Invalid(where, "'source' is a non-empty string (the datasheet the figures come from)");
  }
  gpu.source = row["source"].Scalar();
  st = ReadTflops(row, where, &gpu);
  if (!st.ok()) return st;
  if (const YAML::Node hbm = row["hbm_tb_per_s"]) {
    absl::StatusOr<std::optional<double>> value = ReadFigure(hbm, where, "hbm_tb_per_s");
    if (!value.ok()) return value.status();
    gpu.hbm_tb_per_s = *value;
  }
  return gpu;
}

// CheckOrder() rejects a row that an earlier row hides: FindGpu() takes the first row that
// matches, so a match containing an earlier row's match ("h100 nvl" after "h100") never wins, and
// a second row of the same name would make reports ambiguous.
absl::Status CheckOrder(const GpuSpecs& specs, const std::string& display_name) {
  for (size_t later = 0; later < specs.gpus.size(); ++later) {
    const GpuPeak& gpu = specs.gpus[later];
    const std::string where =
        StrCat(display_name, ": gpus[", later, "] (", EscapedControls(gpu.name), ")");
    for (size_t earlier = 0; earlier < later; ++earlier) {
      const GpuPeak& first = specs.gpus[earlier];
      if (first.name == gpu.name) {
        return Invalid(where, StrCat("name also used by gpus[", earlier, "]"));
      }
      for (const std::string& match : gpu.match) {
        for (const std::string& caught_by : first.match) {
          if (match.find(caught_by) == std::string::npos) continue;
          return Invalid(where,
                         StrCat("match '", EscapedControls(match), "' never wins: gpus[", earlier,
                                "] (", EscapedControls(first.name), ") comes first and matches '",
                                EscapedControls(caught_by), "' (put the more specific row first)"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GpuSpecs> ReadSpecs(const YAML::Node& root, const std::string& display_name) {
  if (!root.IsMap()) {
    return Invalid(display_name, "a GPU peak table is a YAML map with 'gpus', a list of GPUs");
  }
  absl::Status keys = CheckKeys(root, kTopKeys, display_name);
  if (!keys.ok()) return keys;
  const YAML::Node rows = root["gpus"];
  if (!rows || !rows.IsSequence()) return Invalid(display_name, "'gpus' is a list of GPUs");
  GpuSpecs specs;
  for (const auto& row : rows) {
    absl::StatusOr<GpuPeak> gpu = ReadRow(row, specs.gpus.size(), display_name);
    if (!gpu.ok()) return gpu.status();
    specs.gpus.push_back(*std::move(gpu));
  }
  absl::Status order = CheckOrder(specs, display_name);
  if (!order.ok()) return order;
  return specs;
}

}  // namespace

std::string_view DTypeName(DType type) { return kDTypeNames[static_cast<size_t>(type)]; }

absl::StatusOr<GpuSpecs> ParseGpuSpecs(std::string_view yaml, const std::string& display_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        StrCat(display_name, ":", e.mark.line + 1, ": ", EscapedControls(e.msg)));
  }
  return ReadSpecs(root, display_name);
}

absl::StatusOr<GpuSpecs> LoadGpuSpecs(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(StrCat(path, ": cannot open GPU spec file: ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseGpuSpecs(text.str(), path);
}

const GpuSpecs& BuiltinGpuSpecs() {
  // Never destroyed: a function-local static of a type with a destructor could be used by another
  // static's destructor after its own ran.
  static const GpuSpecs* const kBuiltin = [] {
    absl::StatusOr<GpuSpecs> specs = ParseGpuSpecs(kEmbeddedGpuSpecs[0].text, "data/gpus.yaml");
    // The table is compiled in and tests/gpu_spec_test.cc parses it: an error here is a defect of
    // this build, not of the user's input.
    if (!specs.ok()) {
      std::fprintf(stderr, "tracefuse: built-in %s\n",
                   std::string(specs.status().message()).c_str());
      std::abort();
    }
    return new GpuSpecs(*std::move(specs));
  }();
  return *kBuiltin;
}

GpuSpecs WithBuiltinGpuSpecs(GpuSpecs rows) {
  for (const GpuPeak& builtin : BuiltinGpuSpecs().gpus) {
    const bool replaced = std::any_of(rows.gpus.begin(), rows.gpus.end(),
                                      [&](const GpuPeak& row) { return row.name == builtin.name; });
    if (!replaced) rows.gpus.push_back(builtin);
  }
  return rows;
}

const GpuPeak* FindGpu(const GpuSpecs& specs, std::string_view device_name) {
  std::string name = AsciiLower(device_name);
  constexpr std::string_view kVirtualFunction = " vf";
  if (name.size() >= kVirtualFunction.size() &&
      std::string_view(name).substr(name.size() - kVirtualFunction.size()) == kVirtualFunction) {
    name.resize(name.size() - kVirtualFunction.size());
  }
  if (name.empty()) return nullptr;
  for (const GpuPeak& gpu : specs.gpus) {
    for (const std::string& match : gpu.match) {
      if (name.find(match) != std::string::npos) return &gpu;
    }
  }
  return nullptr;
}

}  // namespace tracefuse
