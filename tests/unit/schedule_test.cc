// The memory-aware order lowers the bytes live at once when the graph's own order is poor, and
// never changes the outputs.
#include <gtest/gtest.h>

#include <cstring>

#include "plan/memory_plan.h"
#include "plan/plan.h"
#include "runtime/executor.h"

namespace fusor {
namespace {

// t1 = Relu(x); t2 = Sigmoid(x); s1 = ReduceMean(t1); s2 = ReduceMean(t2); y = s1 + s2, in that
// order: both big temporaries are alive together unless each reduction runs right after its
// producer.
std::shared_ptr<const Graph> two_branches() {
  auto g = std::make_shared<Graph>();
  g->opset = 17;
  auto value = [&](const char* name) {
    Value v;
    v.name = name;
    v.dtype = DType::Float32;
    return g->add_value(v);
  };
  int x = value("x");
  g->inputs.push_back(x);
  auto node = [&](Op op, std::vector<int> in, const char* out) {
    Node n;
    n.op = op;
    n.op_type = op_info(op).name;
    n.name = out;
    n.opset = 17;
    n.inputs = in;
    n.outputs = {value(out)};
    g->values[static_cast<size_t>(n.outputs[0])].producer = static_cast<int>(g->nodes.size());
    g->nodes.push_back(n);
    return n.outputs[0];
  };
  int t1 = node(Op::Relu, {x}, "t1");
  int t2 = node(Op::Sigmoid, {x}, "t2");
  int s1 = node(Op::ReduceMean, {t1}, "s1");
  int s2 = node(Op::ReduceMean, {t2}, "s2");
  g->outputs = {node(Op::Add, {s1, s2}, "y")};
  return g;
}

TEST(Schedule, MemoryAwareOrderLowersPeakAndKeepsOutputs) {
  auto g = two_branches();
  PlanOptions graph_order;
  graph_order.memory_aware_order = false;
  Plan as_given = build_plan(g, {{"x", {1024, 256}}}, graph_order);
  Plan reordered = build_plan(g, {{"x", {1024, 256}}}, {});
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
