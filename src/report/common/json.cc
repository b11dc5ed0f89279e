#include "tracefuse/report/json.h"

namespace tracefuse {

std::string DumpJson(const Json& json, int indent) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tracefuse
