// What the public Engine and Session hide, for fusor's own later stages: the precision gate, the
// profiler, the server and (for now) `fusor optimize` reach the imported graph, the plan a
// session runs and its executor here. Nothing in include/fusor/ or the Python binding may
// include this; users see a session through Session::set_observer and fusion_items().
#pragma once
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

struct EngineInternals {
  static const std::shared_ptr<const Graph>& graph(const Engine& engine);
  static const Plan& plan(const Session& session);
  static Executor& executor(Session& session);
  static Session session(std::unique_ptr<Plan> plan, const SessionOptions& options);
};

// The model as imported.
inline const Graph& graph_of(const Engine& engine) { return *EngineInternals::graph(engine); }
inline const Plan& plan_of(const Session& session) { return EngineInternals::plan(session); }
// The session's executor. Its step hook and observer are the ones Session::set_observer
// installs: setting either here replaces the session's observer.
inline Executor& executor_of(Session& session) { return EngineInternals::executor(session); }

// Engine::session with the internal options as well.
Session build_session(const Engine& engine, const std::map<std::string, Dims>& input_dims,
                      const SessionOptions& options, const InternalSessionOptions& internal);

}  // namespace fusor
