// The executor's arena: guards catch overflows and name the kernel and tensor, a steady-state
// run allocates nothing, concurrent sessions never share bytes, and executors that share one
// arena (one at a time) each give their own results.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "fusor/engine.h"
#include "kernels/cpu/backend.h"
#include "plan/memory_plan.h"
#include "runtime/executor.h"
#include "allocation_counter.h"
#include "graph_builder.h"

namespace fusor {
namespace {

// x -> Relu -> a -> Sigmoid -> b -> Add(b, x) -> y, and MatMul(y, W) -> z.
std::shared_ptr<const Graph> small_graph() {
  test::GraphBuilder b;
  int x = b.input("x");
  Tensor w(DType::Float32, {16, 8});
  for (int i = 0; i < 128; ++i) w.data<float>()[i] = static_cast<float>(i % 7) * 0.125f;
  int W = b.constant("W", w);
  int a = b.node(Op::Relu, {x}, "a");
  int s = b.node(Op::Sigmoid, {a}, "b");
  int y = b.node(Op::Add, {s, x}, "y");
  return b.finish({y, b.node(Op::MatMul, {y, W}, "z")});
}

Tensor input_x(float scale) {
  Tensor x(DType::Float32, {4, 16});
  for (int i = 0; i < 64; ++i) x.data<float>()[i] = scale * static_cast<float>(i - 32) / 8.0f;
  return x;
}

class Overflowing final : public Kernel {
 public:
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    std::memset(out[0].raw(), 0, out[0].nbytes() + 4);  // four bytes too many
  }
  std::string name() const override { return "overflowing_test_kernel"; }
};

TEST(Plan, AFastPlanNeedsABackend) {
  EXPECT_THROW(build_plan(small_graph(), {{"x", {4, 16}}}, {}), Error);
  Plan reference = build_plan(small_graph(), {{"x", {4, 16}}}, {.kernels = KernelChoice::Reference});
  EXPECT_EQ(reference.backend, nullptr);
  EXPECT_EQ(build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()}).backend, &cpu::backend());
}

// x as a view `offset_floats` past a 64-byte aligned buffer: offset 1 is not aligned.
Tensor shifted(const Tensor& x, size_t offset_floats, Tensor& buffer) {
  buffer = Tensor(DType::Float32, {x.numel() + 16});
  Tensor view = Tensor::view(DType::Float32, x.dims(), buffer.data<float>() + offset_floats);
  std::memcpy(view.raw(), x.raw(), x.nbytes());
  return view;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].nbytes() != b[i].nbytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()) != 0) return false;
  return true;
}

// Kernels read an aligned input in place and an unaligned one from the arena copy: the same
// bits either way, the caller's tensor untouched, and no run reads an earlier run's input.
TEST(Executor, AlignedInputsAreReadInPlaceWithTheResultsOfACopy) {
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  Executor ex(plan);
  Tensor buffer;
  for (float scale : {1.f, 2.f}) {
    const Tensor x = input_x(scale);
    const auto in_place = ex.run({x});
    const auto copied = ex.run({shifted(x, 1, buffer)});
    EXPECT_TRUE(same_bits(in_place, copied)) << "scale " << scale;
    EXPECT_TRUE(same_bits({x}, {input_x(scale)})) << "the caller's input changed";
    Plan other = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
    Executor fresh(other);
    EXPECT_TRUE(same_bits(in_place, fresh.run({shifted(x, 1, buffer)}))) << "scale " << scale;
  }
}

TEST(Executor, GuardNamesTheKernelAndTensorThatOverflowed) {
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  plan.steps[1].kernel = std::make_unique<Overflowing>();  // the Sigmoid writing b
  Executor guarded(plan, {.mem_reuse = true, .mem_guard = true});
  try {
    guarded.run({input_x(1)});
    FAIL() << "overflow not detected";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("overflowing_test_kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
  }
}

// The serving path (fast kernels) must not allocate per inference; reference kernels are
// written for clarity and may.
TEST(Executor, SteadyStateRunAllocatesNothing) {
  if (!test::counting_available()) GTEST_SKIP() << "allocation counting needs the plain allocator";
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  Executor ex(plan);
  std::vector<Tensor> inputs{input_x(1)}, outputs;
  ex.run_into(inputs, outputs);  // the first run allocates the outputs
  test::start_counting_allocations();
  for (int i = 0; i < 5; ++i) ex.run_into(inputs, outputs);
  const test::AllocationCount n = test::stop_counting_allocations();
  EXPECT_EQ(n.fusor, 0);
  RecordProperty("onednn_internal_allocations_per_run", static_cast<int>(n.onednn / 5));
}

// A decoder step reads a few rows of its logits: run_in_place hands the outputs over where the
// plan left them. They equal run()'s, the next run rewrites them in place (views, not copies),
// and a steady-state run allocates nothing for them.
TEST(Executor, RunInPlaceGivesViewsOfTheOutputsThatTheNextRunRewrites) {
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  Plan ref = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  Executor ex(plan), alone(ref);
  std::vector<Tensor> views;
  ASSERT_TRUE(ex.run_in_place({input_x(1)}, views));
  ASSERT_EQ(views.size(), 2u);
  EXPECT_TRUE(same_bits(views, alone.run({input_x(1)})));
  const void* first = views[1].raw();
  ASSERT_TRUE(ex.run_in_place({input_x(-2)}, views));
  EXPECT_EQ(views[1].raw(), first);
  EXPECT_TRUE(same_bits(views, alone.run({input_x(-2)})));
  if (test::counting_available()) {
    const std::vector<Tensor> inputs{input_x(3)};
    test::start_counting_allocations();
    for (int i = 0; i < 5; ++i) ex.run_in_place(inputs, views);
    EXPECT_EQ(test::stop_counting_allocations().fusor, 0);
  }
}

TEST(Executor, ReuseOnOffAndGuardedGiveBitIdenticalOutputs) {
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  std::vector<std::vector<Tensor>> results;
  for (ExecutorOptions o : {ExecutorOptions{true, false}, ExecutorOptions{false, false}, ExecutorOptions{true, true}}) {
    Executor ex(plan, o);
    ex.run({input_x(3)});  // a different request first: nothing of it may leak into the next
    results.push_back(ex.run({input_x(1)}));
  }
  for (size_t r = 1; r < results.size(); ++r)
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_EQ(std::memcmp(results[0][i].raw(), results[r][i].raw(), results[0][i].nbytes()), 0) << r << " " << i;
}

TEST(Executor, ConcurrentExecutorsNeverShareBytes) {
  auto graph = small_graph();
  Plan plan = build_plan(graph, {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  auto expected_for = [&](float scale) { return Executor(plan).run({input_x(scale)}); };
  auto e1 = expected_for(1), e2 = expected_for(-2);
  std::atomic<int> mismatches{0};
  auto worker = [&](float scale, const std::vector<Tensor>& expected) {
    Plan own = build_plan(graph, {{"x", {4, 16}}}, {.backend = &cpu::backend()});  // one execution context per stream
    Executor ex(own);
    for (int i = 0; i < 200; ++i) {
      auto got = ex.run({input_x(scale)});
      for (size_t o = 0; o < got.size(); ++o)
        if (std::memcmp(got[o].raw(), expected[o].raw(), got[o].nbytes()) != 0) ++mismatches;
    }
  };
  std::thread t1(worker, 1.0f, std::cref(e1)), t2(worker, -2.0f, std::cref(e2));
  t1.join();
  t2.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Executor, APlanServesOneExecutorAtATime) {
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  {
    Executor first(plan);
    EXPECT_THROW(Executor second(plan), Error);
  }
  Executor again(plan);  // released when the first one went away
}

Tensor input_rows(int64_t rows, float scale) {
  Tensor x(DType::Float32, {rows, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = scale * static_cast<float>(i % 61 - 30) / 8.0f;
  return x;
}

// A server context's plans for two shapes run one after another in one arena, which grows when
// the larger is built after the smaller has run: every run equals its own executor's, bit for
// bit, guarded or not, and the arena is the larger plan's, not the sum.
TEST(Executor, ExecutorsSharingAnArenaEachGiveTheirOwnResults) {
  for (bool guard : {false, true}) {
    SCOPED_TRACE(guard ? "guarded" : "unguarded");
    const ExecutorOptions own{.mem_reuse = true, .mem_guard = guard};
    auto shared = std::make_shared<SharedArena>();
    ExecutorOptions in_shared = own;
    in_shared.shared_arena = shared;
    Plan small_plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
    Plan large_plan = build_plan(small_graph(), {{"x", {64, 16}}}, {.backend = &cpu::backend()});
    Plan small_ref = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
    Plan large_ref = build_plan(small_graph(), {{"x", {64, 16}}}, {.backend = &cpu::backend()});
    Executor small(small_plan, in_shared), small_alone(small_ref, own), large_alone(large_ref, own);
    EXPECT_TRUE(same_bits(small.run({input_rows(4, 1)}), small_alone.run({input_rows(4, 1)})));
    const uint64_t before = shared->generation();
    Executor large(large_plan, in_shared);  // grows the arena under the small one
    EXPECT_GT(shared->generation(), before);
    EXPECT_EQ(shared->size(), std::max(small.memory().arena_bytes, large.memory().arena_bytes));
    for (float scale : {2.f, -1.f, 3.f}) {
      EXPECT_TRUE(same_bits(large.run({input_rows(64, scale)}), large_alone.run({input_rows(64, scale)}))) << scale;
      EXPECT_TRUE(same_bits(small.run({input_rows(4, -scale)}), small_alone.run({input_rows(4, -scale)}))) << scale;
    }
  }
}

// A session built alone and then handed to a server context's arena keeps its executor: after
// it ran in its own arena, it runs in the shared one (sized for it at once) with the same bits,
// and a run in another arena between two of its runs changes nothing of its results.
TEST(Executor, AnExecutorThatRanAloneMovesIntoASharedArena) {
  for (bool guard : {false, true}) {
    SCOPED_TRACE(guard ? "guarded" : "unguarded");
    const ExecutorOptions own{.mem_reuse = true, .mem_guard = guard};
    Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
    Plan ref = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
    Plan other_plan = build_plan(small_graph(), {{"x", {64, 16}}}, {.backend = &cpu::backend()});
    Executor ex(plan, own), alone(ref, own);
    const auto before = ex.run({input_x(1)});
    EXPECT_TRUE(same_bits(before, alone.run({input_x(1)})));
    auto shared = std::make_shared<SharedArena>();
    ex.share_arena(shared);
    EXPECT_GE(shared->size(), ex.memory().arena_bytes);
    Executor other(other_plan, {.mem_reuse = true, .mem_guard = guard, .shared_arena = shared});
    for (float scale : {2.f, -1.f}) {
      other.run({input_rows(64, scale)});  // leaves its bytes where ex's values live
      EXPECT_TRUE(same_bits(ex.run({input_x(scale)}), alone.run({input_x(scale)}))) << scale;
    }
  }
}

TEST(Executor, ASharedArenaRefusesTwoRunsAtOnce) {
  auto shared = std::make_shared<SharedArena>();
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  Executor ex(plan, {.shared_arena = shared});
  {
    SharedArena::Use other_run(*shared);
    EXPECT_THROW(ex.run({input_x(1)}), Error);
  }
  EXPECT_NO_THROW(ex.run({input_x(1)}));
}

TEST(MemoryPlan, OverlappingLifetimesNeverShareBytes) {
  Plan plan = build_plan(small_graph(), {{"x", {4, 16}}}, {.backend = &cpu::backend()});
  MemoryPlan mp = plan_memory(plan, {});
  for (size_t a = 0; a < mp.offset.size(); ++a)
    for (size_t b = a + 1; b < mp.offset.size(); ++b) {
      if (mp.offset[a] < 0 || mp.offset[b] < 0) continue;
      bool live_together = mp.lifetime[a].first_step <= mp.lifetime[b].last_step &&
                           mp.lifetime[b].first_step <= mp.lifetime[a].last_step;
      bool share = mp.offset[a] < mp.offset[b] + static_cast<int64_t>(mp.bytes[b]) &&
                   mp.offset[b] < mp.offset[a] + static_cast<int64_t>(mp.bytes[a]);
      EXPECT_FALSE(live_together && share) << a << " and " << b;
    }
  // x is read by the Add (step 2), so a (dead after step 1) may reuse nothing of x; y and z
  // are graph outputs and live to the end.
  const Graph& g = *plan.graph;
  EXPECT_EQ(mp.lifetime[static_cast<size_t>(g.find_value("x"))].last_step, 2);
  EXPECT_EQ(mp.lifetime[static_cast<size_t>(g.find_value("y"))].last_step, static_cast<int>(plan.steps.size()));
  EXPECT_LE(mp.arena_bytes, mp.naive_bytes);
  EXPECT_GE(mp.arena_bytes, mp.lower_bound_bytes);
  MemoryPlan naive = plan_memory(plan, {.reuse = false});
  EXPECT_EQ(naive.arena_bytes, naive.naive_bytes);
}

}  // namespace
}  // namespace fusor
