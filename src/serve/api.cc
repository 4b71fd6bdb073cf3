// fusor/serve.h over the server and its served models.
#include "fusor/serve.h"

#include <malloc.h>

#include "serve/server.h"

namespace fusor::serve {

RunningServer::RunningServer(std::unique_ptr<Server> server) : server_(std::move(server)) {}
RunningServer::RunningServer(RunningServer&&) noexcept = default;
RunningServer& RunningServer::operator=(RunningServer&&) noexcept = default;
RunningServer::~RunningServer() = default;  // ~Server shuts down

void RunningServer::shutdown() {
  if (server_) server_->shutdown();
}

RunningServer start_server(std::vector<ModelToServe> models, const ServeConfig& config, int threads_per_context,
                           Listen listen) {
  std::vector<std::string> names;
  for (const ModelToServe& m : models) names.push_back(m.name);
  check_model_names(names);
  std::vector<std::unique_ptr<ServedModel>> served;
  std::vector<std::unique_ptr<GenerativeModel>> generative;
  for (ModelToServe& m : models) {
    ServeConfig model_config = config;
    if (m.matrix_fusion.size() == config.matrix.size())
      for (size_t i = 0; i < config.matrix.size(); ++i) model_config.matrix[i].fusion = m.matrix_fusion[i];
    if (!m.path.empty() && is_decoder_export(m.engine, m.path))
      generative.push_back(std::make_unique<GenerativeModel>(m.name, std::move(m.engine), m.path, config, m.session,
                                                             threads_per_context * static_cast<int>(config.execution_contexts)));
    else
      served.push_back(
          std::make_unique<ServedModel>(m.name, std::move(m.engine), model_config, m.session, threads_per_context));
  }
  listen.max_body_bytes = config.max_body_bytes;
  auto server = std::make_unique<Server>(std::move(served), std::move(generative), listen);
  server->start();
  // Loading and planning free far more than they keep (the parsed file, packing's temporaries,
  // each plan's scratch), and glibc keeps the freed pages: a served llama-tiny held 307 MB, 55 MB
  // of them free. Given back once, before the first request.
  malloc_trim(0);
  return RunningServer(std::move(server));
}

}  // namespace fusor::serve
