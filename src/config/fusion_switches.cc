// Loops over the fusion switch table (include/fusor/fusion_switches.h).
#include "fusor/config.h"

namespace fusor {

bool switches_pass(const FusionSwitch& s, std::string_view pass) {
  for (std::string_view rest = s.passes; !rest.empty();) {
    size_t space = rest.find(' ');
    if (rest.substr(0, space) == pass) return true;
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  }
  return false;
}

void set_every_switch(FusionConfig& f, bool on) {
  for (const FusionSwitch& s : kFusionSwitches) f.*s.member = on;
}

}  // namespace fusor
