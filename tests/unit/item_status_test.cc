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

// ItemVerdict::status still takes the names from gate.cc; both spellings mean the same status.
TEST(ItemStatus, VerdictStatusTakesNamesAndEnums) {
  ItemVerdict v;
  EXPECT_EQ(v.status, ItemStatus::Kept);
  v.status = "rolled_back";
  EXPECT_EQ(v.status, ItemStatus::RolledBack);
  EXPECT_TRUE(v.status == "rolled_back");
  EXPECT_FALSE(v.status == "kept");
  v.status = ItemStatus::Kept;
  EXPECT_STREQ(item_status_name(v.status), "kept");
  EXPECT_THROW(v.status = "rolled back", Error);
}

}  // namespace
}  // namespace fusor
