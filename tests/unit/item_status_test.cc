// The precision gate's item statuses: one enum, one name function; the names are what check
// reports write and the onboard report reads back.
#include <gtest/gtest.h>

#include "check/gate.h"

namespace fusor {
namespace {

TEST(ItemStatus, NamesRoundTrip) {
  EXPECT_STREQ(item_status_name(ItemStatus::Kept), "kept");
  EXPECT_STREQ(item_status_name(ItemStatus::RolledBack), "rolled_back");
  for (ItemStatus s : {ItemStatus::Kept, ItemStatus::RolledBack}) EXPECT_EQ(item_status_from_name(item_status_name(s)), s);
  EXPECT_EQ(item_status_from_name("rolled back"), std::nullopt);
  EXPECT_EQ(item_status_from_name(""), std::nullopt);
}

}  // namespace
}  // namespace fusor
