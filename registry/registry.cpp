#include "registry/registry.h"

namespace trainrun {

std::map<std::string, const KindView*>& kinds() {
  static std::map<std::string, const KindView*> all;
  return all;
}

}  // namespace trainrun
