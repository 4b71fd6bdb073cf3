// The memory-aware order lowers the bytes live at once when the graph's own order is poor, and
// never changes the outputs.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/cpu/backend.h"
#include "plan/memory_plan.h"
#include "plan/plan.h"
#include "runtime/executor.h"
#include "graph_builder.h"

namespace fusor {
namespace {

// t1 = Relu(x); t2 = Sigmoid(x); s1 = ReduceMean(t1); s2 = ReduceMean(t2); y = s1 + s2, in that
// order: both big temporaries are alive together unless each reduction runs right after its
// producer.
std::shared_ptr<const Graph> two_branches() {
  test::GraphBuilder b;
  int x = b.input("x");
  int t1 = b.node(Op::Relu, {x}, "t1");
  int t2 = b.node(Op::Sigmoid, {x}, "t2");
  int s1 = b.node(Op::ReduceMean, {t1}, "s1");
  int s2 = b.node(Op::ReduceMean, {t2}, "s2");
  return b.finish({b.node(Op::Add, {s1, s2}, "y")});
}

TEST(Schedule, MemoryAwareOrderLowersPeakAndKeepsOutputs) {
  auto g = two_branches();
  PlanOptions graph_order;
  graph_order.backend = &cpu::backend();
  graph_order.memory_aware_order = false;
  Plan as_given = build_plan(g, {{"x", {1024, 256}}}, graph_order);
  Plan reordered = build_plan(g, {{"x", {1024, 256}}}, {.backend = &cpu::backend()});
  const size_t big = 1024 * 256 * sizeof(float);
  EXPECT_GE(plan_memory(as_given, {}).lower_bound_bytes, 3 * big);  // x, t1, t2 together
  EXPECT_LT(plan_memory(reordered, {}).lower_bound_bytes, 3 * big);

  Tensor x(DType::Float32, {1024, 256});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 97) / 13.0f - 3.0f;
  Tensor a = Executor(as_given).run({x})[0], b = Executor(reordered).run({x})[0];
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

}  // namespace
}  // namespace fusor
