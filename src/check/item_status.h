// What the precision gate decided for one fusion item. The names are the "status" of an item in
// `fusor check --report` JSON, which the onboard report reads back; nothing else spells them.
#pragma once
#include <optional>
#include <string_view>

namespace fusor {

enum class ItemStatus {
  Kept,        // within tolerance (or no further from the truth than native): stays fused
  RolledBack,  // failed: added to fusion.disabled, the plan is rebuilt without it
};

constexpr const char* item_status_name(ItemStatus s) {
  switch (s) {
    case ItemStatus::Kept: return "kept";
    case ItemStatus::RolledBack: return "rolled_back";
  }
  return "?";
}

constexpr std::optional<ItemStatus> item_status_from_name(std::string_view name) {
  for (ItemStatus s : {ItemStatus::Kept, ItemStatus::RolledBack})
    if (name == item_status_name(s)) return s;
  return std::nullopt;
}

}  // namespace fusor
