// What the public Engine and Session hide, for fusor's own later stages: the precision gate, the
// profiler, the server and (for now) `fusor optimize` reach the imported graph, the plan a
// session runs and its executor here. Nothing in include/fusor/ or the Python binding may
// include this; users see a session through Session::set_observer and fusion_items().
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "fusor/engine.h"
#include "plan/plan.h"
#include "runtime/executor.h"

namespace fusor {

// Session options only fusor's own stages set.
struct InternalSessionOptions {
  // Replaces the kernel chosen for each fused step (the precision gate's fault injection).
  KernelWrapper wrap_fused_kernel;
};

// A plan made for some inputs' values, and which inputs it froze (the values a later run must
// repeat to reuse it).
struct PlanForValues {
  std::unique_ptr<Plan> plan;
  std::vector<std::string> frozen;
};
// Plans the model with inputs frozen to their values in `inputs`: how a session planned per run
// gets each run's plan (see build_session).
using PlanForInputs = std::function<PlanForValues(const std::map<std::string, Tensor>& inputs)>;
// The session's model with the same bindings on reference kernels, for inputs holding NaN where
// a fast kernel would drop it (Kernel::drops_nan); built on the first such run.
using PlanOnReference = std::function<std::unique_ptr<Plan>()>;

struct EngineInternals {
  static const std::shared_ptr<const Graph>& graph(const Engine& engine);
  static const Plan& plan(const Session& session);
  static Executor& executor(Session& session);
  static void share_arena(Session& session, std::shared_ptr<SharedArena> arena);
  static Session session(std::unique_ptr<Plan> plan, const SessionOptions& options,
                         PlanOnReference nan_faithful = nullptr);
  // A session without a plan until run(): `model` and `dims` check each run's inputs, and
  // `reason` says which shape needed input values.
  static Session session_planned_per_run(PlanForInputs plan_for, std::string reason,
                                         std::shared_ptr<const Graph> model, std::map<std::string, Dims> dims,
                                         const SessionOptions& options);
  static const std::string& planned_per_run(const Session& session);
  static void prepare(Session& session, const std::map<std::string, Tensor>& inputs);
};

// Why the session is planned per run (the first shape that needed input values), or "" when it
// has one plan for every run.
inline const std::string& planned_per_run(const Session& session) { return EngineInternals::planned_per_run(session); }
// A session planned per run plans for these inputs now, without running (nothing for others):
// plan_of and executor_of then describe the run with these values. Runs with the same values
// keep that plan and executor (their hooks too); other values replace both.
inline void prepare_for(Session& session, const std::map<std::string, Tensor>& inputs) {
  EngineInternals::prepare(session, inputs);
}

// The model as imported.
inline const Graph& graph_of(const Engine& engine) { return *EngineInternals::graph(engine); }
// The session's plan; a session planned per run throws before its first run (or prepare_for).
inline const Plan& plan_of(const Session& session) { return EngineInternals::plan(session); }
// The session's executor. Its step hook and observer are the ones Session::set_observer
// installs: setting either here replaces the session's observer.
inline Executor& executor_of(Session& session) { return EngineInternals::executor(session); }

// From now on the session runs in `arena`, which other sessions of the same thread share (one
// run at a time): a server context's packed plans (runtime/shared_arena.h).
inline void share_arena(Session& session, std::shared_ptr<SharedArena> arena) {
  EngineInternals::share_arena(session, std::move(arena));
}

// How a session with these options plans (kernels, fusion, frozen inputs, reordering).
PlanOptions plan_options(const SessionOptions& options, const InternalSessionOptions& internal);

// Engine::session with the internal options as well. When a shape depends on input values that
// are not known at plan time (ir/data_dependent.h), the session is planned per run instead.
Session build_session(const Engine& engine, const std::map<std::string, Dims>& input_dims,
                      const SessionOptions& options, const InternalSessionOptions& internal);

}  // namespace fusor
