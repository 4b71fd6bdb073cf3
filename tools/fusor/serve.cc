// fusor serve: KServe v2 / Triton-compatible inference over HTTP and gRPC, with a dynamic
// batcher per traffic class and Prometheus metrics (docs/serve.md). Runs until SIGTERM or
// SIGINT, then shuts down gracefully and exits 0.
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "commands.h"
#include "fusor/check.h"
#include "fusor/serve.h"
#include "fusor/threads.h"
#include "fusor/tuned_record.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

// A config that fusor tune wrote names the model it measured: its windows and batch sizes served
// with another model were tuned for the wrong one, which nothing else would say.
void warn_of_a_config_tuned_for_another_model(const std::string& config_path,
                                              const std::vector<std::pair<std::string, std::string>>& named) {
  if (config_path.empty() || named.empty()) return;
  tune::TunedRecord record;
  try {
    record = tune::load_tuned_record(config_path);
  } catch (const Error&) {
    return;  // a config of its own, not tune's
  }
  for (const auto& [name, given] : named)
    if (model_file_hash(model_file_in(given)) != record.model_hash)
      std::fprintf(stderr, "fusor serve: warning: model %s is not the model %s was tuned for (%s)\n", name.c_str(),
                   config_path.c_str(), record.model.c_str());
}

struct ServeArgs {
  std::vector<std::string> models;  // NAME=PATH
  ModelArgs options;                // --config, --threads and the session switches
  serve::Listen listen;
};

void serve_command(const ServeArgs& a) {
  // Signals go to sigwait below, not to whichever thread happens to run; a peer that closes
  // its socket must not kill the process with SIGPIPE.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // One thread takes the signal. Before the server is up it ends the process at once: waiting in
  // the main thread's sigwait, Ctrl-C during a long load or precision gate was held until the
  // server was ready (17 s), which then exited 0. After, it tells the main thread to drain.
  // Static: the detached watcher outlives this frame when start-up throws (a port in use).
  static std::mutex stop_mu;
  static std::condition_variable stop_cv;
  static int stop_signal = 0;
  static bool started = false;
  std::thread watcher([stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::lock_guard lock(stop_mu);
    if (!started) {
      std::fprintf(stderr, "fusor serve: %s during start-up: stopped\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      std::_Exit(128 + sig);
    }
    stop_signal = sig;
    stop_cv.notify_all();
  });
  watcher.detach();

  const ServeConfig& config = a.options.config.serve;
  int cores = a.options.threads > 0 ? a.options.threads : compute_threads();
  int per_context = std::max<int>(1, cores / static_cast<int>(config.execution_contexts));
  std::vector<serve::ModelToServe> models;
  auto add = [&](const std::string& name, Engine engine, const std::string& path) {
    SessionOptions options = path.empty() ? a.options.session_options() : a.options.session_options(engine, path);
    // Each serve.matrix entry runs its own fusion switches: they pass the gate as the top-level
    // ones do (a batch bucket ran a fusion the gate had never seen, off by 2.5).
    std::vector<FusionConfig> matrix_fusion;
    if (!path.empty() && options.fusion)
      for (const MatrixEntry& e : config.matrix) {
        FusionConfig f = e.fusion;
        f.precision_check = options.fusion->precision_check;
        matrix_fusion.push_back(a.options.gated(engine, path, std::move(f)));
      }
    models.push_back({name, std::move(engine), options, path, std::move(matrix_fusion)});
  };
  if (a.models.empty()) add(serve::kDemoModelName, serve::load_demo_model(), "");
  std::vector<std::pair<std::string, std::string>> named;  // NAME, PATH
  for (const auto& spec : a.models) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error("--model '" + spec + "' must look like NAME=PATH");
    named.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  // Before any model loads (or runs the precision gate): a refused name fails at once.
  std::vector<std::string> names;
  for (const auto& [name, path] : named) names.push_back(name);
  serve::check_model_names(names);
  for (const auto& [name, given] : named) {
    const std::string path = model_file_in(given);
    add(name, Engine::load(path), path);
  }
  warn_of_a_config_tuned_for_another_model(a.options.config_path, named);
  const serve::Listen& listen = a.listen;
  serve::RunningServer server = serve::start_server(std::move(models), config, per_context, listen);
  std::fprintf(stderr, "fusor serve: HTTP %s:%d, gRPC %s:%d, metrics %s:%d; %lld execution context(s) x %d thread(s)\n",
               listen.host.c_str(), listen.http_port, listen.host.c_str(), listen.grpc_port, listen.host.c_str(),
               listen.metrics_port, static_cast<long long>(config.execution_contexts), per_context);
  std::unique_lock lock(stop_mu);
  started = true;
  stop_cv.wait(lock, [&] { return stop_signal != 0; });
  const int sig = stop_signal;
  lock.unlock();
  std::fprintf(stderr, "fusor serve: %s, finishing accepted requests\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  server.shutdown();
  std::fprintf(stderr, "fusor serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve models over KServe v2 HTTP and gRPC (Triton-compatible)");
  cmd->add_option("--model", args->models, "NAME=PATH of an ONNX model, or a decoder's folder (repeatable); none: the demo model");
  // Through ModelArgs, so that a --config with the gate on gates each model without a verdict.
  args->options.add_config_and_threads(*cmd, "YAML config file; the serve section sets traffic classes (docs/serve.md)",
                                       "Threads in all, shared by the execution contexts");
  cmd->add_option("--host", args->listen.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--http", args->listen.http_port, "HTTP port (0: off)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--grpc", args->listen.grpc_port, "gRPC port (0: off)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--metrics", args->listen.metrics_port, "Prometheus metrics port (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->callback([args] { serve_command(*args); });
}

}  // namespace fusor::cli
