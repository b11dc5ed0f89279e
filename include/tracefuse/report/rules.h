// Stage 7, report: `tracefuse rules`, a rule set as its user wrote it.
#ifndef TRACEFUSE_REPORT_RULES_H_
#define TRACEFUSE_REPORT_RULES_H_

#include <string>

#include "tracefuse/classify/classifier.h"

namespace tracefuse {

// RulesText() lists `rules` one rule per line, in evaluation order, with its predicate, so a
// user can see which rule a kernel name will hit first.
std::string RulesText(const RuleSet& rules);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_RULES_H_
