#include <gtest/gtest.h>

#include "ir/op_table.h"
#include "kernels/ref/reference.h"

namespace fusor {

TEST(OpTable, NamesRoundTripAndCategoriesAreSet) {
  for (const OpInfo& info : all_ops()) {
    auto op = op_from_name(info.name);
    ASSERT_TRUE(op.has_value()) << info.name;
    EXPECT_EQ(*op, info.op);
    EXPECT_NE(info.infer, nullptr);
    EXPECT_NE(ref::kernel_for(info.op), nullptr);
  }
  EXPECT_FALSE(op_from_name("NoSuchOp").has_value());
  EXPECT_EQ(op_info(Op::MatMul).category, OpCategory::Contraction);
}

}  // namespace fusor
