// What the fusion passes did to one plan: the items they created and the opportunities they
// declined, each with its reason. The profiler prints it; the precision gate checks the items.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace fusor {

struct FusionItem {
  std::string name;                // stable: derived from the model's node names and the kind
  std::string kind;                // the fused node's op_type: LayerNorm, Gelu, Elementwise, ...
  std::string pass;                // the pass that made it
  std::vector<std::string> nodes;  // the source nodes it replaced (fused items inside by name)
  size_t bytes_saved = 0;          // intermediate bytes no longer written and read back
};

struct NotFused {
  std::string pass;
  std::vector<std::string> nodes;
  std::string reason;
};

struct FusionReport {
  std::vector<FusionItem> items;
  std::vector<NotFused> not_fused;
};

}  // namespace fusor
