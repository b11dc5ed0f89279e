#include <memory>
#include <string>
#include <utility>

#include "classify/embedded_launching_ops.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/classify/classifier.h"
#include "yaml-cpp/yaml.h"

namespace tracefuse {

// FileReader reads a table's two lists of rows, checking every key: a misspelt one would
// otherwise drop its row without a word.
class LaunchingOpTable::FileReader {
 public:
  FileReader(const std::string& source, LaunchingOpTable* table) : source_(source), table_(table) {}

  absl::Status Read(const YAML::Node& root) {
    if (!root.IsMap()) return Error(root, "a launching-op table is a YAML map");
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key != "name" && key != "description" && key != "ops" && key != "modules") {
        return Error(kv.first, StrCat("unknown key '", key, "'"));
      }
    }
    absl::Status st = ReadRows(root["ops"], "ops", &table_->ops_);
    if (st.ok()) st = ReadRows(root["modules"], "classes", &table_->modules_);
    return st;
  }

  absl::Status Error(const YAML::Node& node, std::string_view what) const {
    return ErrorAt(node.Mark().line + 1, what);
  }
  absl::Status ErrorAt(int line, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(source_, ":", line, ": ", EscapedControls(what)));
  }

 private:
  // ReadRows() reads a list of rows, each a category with its names (under `names_key`) and
  // prefixes. A name listed twice is an error: the second row could never take it.
  absl::Status ReadRows(const YAML::Node& list, const std::string& names_key, Rows* rows) {
    if (!list) return absl::OkStatus();
    if (!list.IsSequence()) return Error(list, "a list of rows, each with a 'category'");
    for (const YAML::Node& row : list) {
      if (!row.IsMap() || !row["category"] || !row["category"].IsScalar() ||
          row["category"].Scalar().empty()) {
        return Error(row, "a row is a map with a 'category'");
      }
      for (const auto& kv : row) {
        const std::string key = kv.first.as<std::string>();
        if (key != "category" && key != names_key && key != "prefixes") {
          return Error(kv.first, StrCat("unknown key '", key, "' (a row has 'category', '",
                                        names_key, "' and 'prefixes')"));
        }
      }
      const auto index = static_cast<uint32_t>(rows->category.size());
      const std::string category = row["category"].Scalar();
      rows->category.push_back(category);
      if (std::find(table_->categories_.begin(), table_->categories_.end(), category) ==
          table_->categories_.end()) {
        table_->categories_.push_back(category);
      }
      absl::Status st = ReadNames(row[names_key], [&](const YAML::Node& n) {
        if (!rows->exact.try_emplace(n.Scalar(), index).second) {
          return Error(n, StrCat("'", n.Scalar(), "' is listed twice"));
        }
        return absl::OkStatus();
      });
      if (st.ok()) {
        st = ReadNames(row["prefixes"], [&](const YAML::Node& n) {
          rows->prefixes.emplace_back(n.Scalar(), index);
          return absl::OkStatus();
        });
      }
      if (!st.ok()) return st;
      if (!row[names_key] && !row["prefixes"]) {
        return Error(row, StrCat("a row without '", names_key, "' or 'prefixes'"));
      }
    }
    return absl::OkStatus();
  }

  template <typename F>
  absl::Status ReadNames(const YAML::Node& names, F&& add) const {
    if (!names) return absl::OkStatus();
    if (!names.IsSequence()) return Error(names, "a list of names");
    for (const YAML::Node& n : names) {
      if (!n.IsScalar() || n.Scalar().empty()) return Error(n, "a name is a non-empty string");
      absl::Status st = add(n);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }

  const std::string& source_;
  LaunchingOpTable* table_;
};

absl::StatusOr<std::shared_ptr<const LaunchingOpTable>> LaunchingOpTable::FromYaml(
    std::string_view text, const std::string& source) {
  auto table = std::make_shared<LaunchingOpTable>();
  FileReader reader(source, table.get());
  try {
    absl::Status read = reader.Read(YAML::Load(std::string(text)));
    if (!read.ok()) return read;
  } catch (const YAML::Exception& e) {
    return reader.ErrorAt(e.mark.line + 1, e.msg);
  }
  return std::shared_ptr<const LaunchingOpTable>(std::move(table));
}

std::string_view LaunchingOpTable::BuiltinText() { return kEmbeddedLaunchingOps[0].text; }

std::shared_ptr<const LaunchingOpTable> LaunchingOpTable::Builtin() {
  // The build checks the embedded table (tests/classify_test.cc), so reading it cannot fail.
  static const std::shared_ptr<const LaunchingOpTable> table =
      *FromYaml(BuiltinText(), "data/launching-ops.yaml");
  return table;
}

std::string_view LaunchingOpTable::Rows::Match(std::string_view name) const {
  uint32_t best = UINT32_MAX;
  if (auto it = exact.find(name); it != exact.end()) best = it->second;
  for (const auto& [prefix, row] : prefixes) {
    if (row >= best) break;  // in row order: no later prefix can win
    if (name.substr(0, prefix.size()) == prefix) best = row;
  }
  return best == UINT32_MAX ? std::string_view() : std::string_view(category[best]);
}

std::string_view LaunchingOpTable::CategoryOfOp(std::string_view name) const {
  return ops_.Match(name);
}

std::string_view LaunchingOpTable::CategoryOfModule(std::string_view name) const {
  return modules_.Match(name);
}

bool ClassifiesByLaunchingOp(const RuleSet& rules) {
  return rules.name() == "tracefuse" || rules.extends() == "tracefuse";
}

}  // namespace tracefuse
