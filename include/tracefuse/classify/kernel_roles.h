// Stage 4, library tracefuse_classify: what a kernel does for its operation, beside its category.
//
// The fusion differences (op_compare.h) must tell one operation run as its main kernel plus
// helpers (a split-K GEMM and its reduction) from one kernel doing other operations' work (a
// fused add + RMSNorm), and must never let a kernel "cover" work it cannot do. KernelRoles is that
// knowledge as data, data/kernel-roles.yaml, embedded at build time and read on first use: which
// operations are heavy, what each category can absorb, which kernels are helpers of which
// operations and which main kernels state the operations they fuse.
#ifndef TRACEFUSE_CLASSIFY_KERNEL_ROLES_H_
#define TRACEFUSE_CLASSIFY_KERNEL_ROLES_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "tracefuse/classify/classifier.h"

namespace tracefuse {

// KernelRole is one kernel's role: a main kernel of its operation (`helper` empty), possibly
// fusing the operations `covers` names, or a helper of the operations `serves` names.
struct KernelRole {
  std::string helper;               // the helper's kind ("split-K reduce"); "" for a main kernel
  std::vector<std::string> serves;  // a helper's operations, by category; "any": the next kernel
  std::vector<std::string> covers;  // a fused main kernel's operations, by category

  bool is_helper() const { return !helper.empty(); }
  bool operator==(const KernelRole& other) const {
    return helper == other.helper && serves == other.serves && covers == other.covers;
  }
};

class KernelRoles {
 public:
  // FromYaml() reads a roles file; errors are one line, "SOURCE:LINE: what" (lines of the helper
  // and fused rules' predicates are counted within the rule). `check_regexes` as for
  // RuleSet::FromYaml(): the embedded file, which the build checks, skips it.
  static absl::StatusOr<std::shared_ptr<const KernelRoles>> FromYaml(std::string_view text,
                                                                     const std::string& source,
                                                                     bool check_regexes = true);
  // Builtin() is the embedded data/kernel-roles.yaml; BuiltinText() its text.
  static std::shared_ptr<const KernelRoles> Builtin();
  static std::string_view BuiltinText();

  // RoleOf() is `name`'s role: the first helper or fused rule that matches it, else a main
  // kernel. An Inductor kernel (`triton_{poi,red,per}_fused_<op>_..._N`) also covers the
  // categories that data/launching-ops.yaml gives its ops.
  KernelRole RoleOf(std::string_view name) const;

  // classifier() matches the helper and fused rules (its categories index them): what the build
  // precompiles (tools/compile_rules.cc), so that a run does not compile their patterns.
  const Classifier& classifier() const { return *classifier_; }

  // heavy() tells whether only a kernel of a heavy operation can take over `category`'s work.
  bool heavy(std::string_view category) const { return heavy_.contains(category); }
  // absorbs() tells whether a kernel of category `by` can take in `category`'s work as a
  // prologue or epilogue (a category always absorbs its own).
  bool absorbs(std::string_view by, std::string_view category) const;

 private:
  class FileReader;                               // kernel_roles.cc
  std::shared_ptr<const Classifier> classifier_;  // category i + 1 is roles_[i]; 0 is "main"
  std::vector<KernelRole> roles_;
  absl::flat_hash_set<std::string, StringHash, StringEq> heavy_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string, StringHash, StringEq>,
                      StringHash, StringEq>
      absorbs_;
};

// InductorOps() are the ATen ops that `table` knows among those an Inductor kernel's name lists
// ("triton_red_fused__to_copy_add_mean_0": aten::_to_copy, aten::add, aten::mean), the longest
// where words could join; empty for other names.
std::vector<std::string> InductorOps(std::string_view name, const LaunchingOpTable& table);

}  // namespace tracefuse

#endif  // TRACEFUSE_CLASSIFY_KERNEL_ROLES_H_
