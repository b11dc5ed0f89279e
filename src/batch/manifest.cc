#include "tracefuse/batch/manifest.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

constexpr char kHeader[] = "label\ttrace1\ttrace2";
constexpr char kHeaderWithOptions[] = "label\ttrace1\ttrace2\toptions";

std::vector<std::string> Split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, separator)) {
    if (separator != ' ' || !field.empty()) fields.push_back(field);
  }
  if (separator == '\t' && !line.empty() && line.back() == '\t') fields.emplace_back();
  return fields;
}

absl::Status LineError(const std::string& path, int line, const std::string& what) {
  return absl::InvalidArgumentError(StrCat(path, ":", line, ": ", what));
}

absl::StatusOr<ManifestRow> ParseRow(const std::string& path, int line_no, const std::string& line,
                                     size_t columns) {
  std::vector<std::string> fields = Split(line, '\t');
  if (fields.size() < 3 || fields.size() > columns) {
    return LineError(path, line_no,
                     StrCat("expected ", columns == 3 ? "3" : "3 or 4",
                            " tab-separated columns (label, trace1, trace2",
                            columns == 3 ? "" : ", options", "), found ", fields.size()));
  }
  ManifestRow row;
  row.line = line_no;
  row.label = fields[0];
  row.trace1 = fields[1];
  row.trace2 = fields[2];
  if (fields.size() == 4) row.options = Split(fields[3], ' ');
  if (!IsValidLabel(row.label)) {
    return LineError(path, line_no,
                     StrCat("bad label '", row.label,
                            "': use letters, digits, '.', '_' and '-' (it names output files)"));
  }
  if (row.trace1.empty() || row.trace2.empty()) return LineError(path, line_no, "empty trace path");
  return row;
}

}  // namespace

bool IsValidLabel(const std::string& label) {
  if (label.empty() || label == "." || label == "..") return false;
  for (char c : label) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<Manifest> ReadManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(StrCat(path, ": cannot open manifest"));
  Manifest manifest;
  manifest.path = path;
  absl::flat_hash_map<std::string, int> label_lines;
  std::string line;
  size_t columns = 0;  // 0 until the header is read
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      manifest.comments.push_back(line.substr(1));
      continue;
    }
    if (columns == 0) {
      if (line != kHeader && line != kHeaderWithOptions) {
        return LineError(path, line_no,
                         "the first line must be the header 'label<TAB>trace1<TAB>trace2' "
                         "(optionally '<TAB>options')");
      }
      columns = line == kHeader ? 3 : 4;
      continue;
    }
    absl::StatusOr<ManifestRow> row = ParseRow(path, line_no, line, columns);
    if (!row.ok()) return row.status();
    auto [it, inserted] = label_lines.try_emplace(row->label, line_no);
    if (!inserted) {
      return LineError(
          path, line_no,
          StrCat("duplicate label '", row->label, "' (first on line ", it->second, ")"));
    }
    manifest.rows.push_back(std::move(*row));
  }
  if (columns == 0) return LineError(path, 1, "empty manifest: no header line");
  return manifest;
}

std::string ManifestText(const Manifest& manifest) {
  bool options = false;
  for (const ManifestRow& r : manifest.rows) options |= !r.options.empty();
  std::string out = StrCat(options ? kHeaderWithOptions : kHeader, "\n");
  for (const std::string& c : manifest.comments) out += StrCat("#", c, "\n");
  for (const ManifestRow& r : manifest.rows) {
    out += StrCat(r.label, "\t", r.trace1, "\t", r.trace2);
    if (options) {
      std::string joined;
      for (const std::string& o : r.options) joined += (joined.empty() ? "" : " ") + o;
      out += StrCat("\t", joined);
    }
    out += "\n";
  }
  return out;
}

std::string ResolveTracePath(const Manifest& manifest, const std::string& trace) {
  std::filesystem::path p(trace);
  if (p.is_absolute() || trace == "-" || manifest.path.empty()) return trace;
  return (std::filesystem::path(manifest.path).parent_path() / p).lexically_normal().string();
}

}  // namespace tracefuse
