#include "serve/server.h"

#include <chrono>
#include <thread>

#include "serve/grpc_server.h"
#include "serve/http_server.h"

namespace fusor::serve {

ServedModel* Models::find(const std::string& name) const {
  for (const auto& m : models_)
    if (m->name() == name) return m.get();
  return nullptr;
}

std::vector<ServedModel*> Models::all() const {
  std::vector<ServedModel*> out;
  for (const auto& m : models_) out.push_back(m.get());
  return out;
}

GenerativeModel* Models::find_generative(const std::string& name) const {
  for (const auto& m : generative_)
    if (m->name() == name) return m.get();
  return nullptr;
}

std::vector<GenerativeModel*> Models::generative() const {
  std::vector<GenerativeModel*> out;
  for (const auto& m : generative_) out.push_back(m.get());
  return out;
}

Server::Server(std::vector<std::unique_ptr<ServedModel>> models, std::vector<std::unique_ptr<GenerativeModel>> generative,
               Listen listen)
    : models_(std::move(models), std::move(generative)), listen_(std::move(listen)) {}

Server::~Server() { shutdown(); }

void Server::start() {
  if (listen_.http_port > 0) {
    http_ = std::make_unique<HttpServer>(HttpServer::Kind::Inference, models_, listen_.max_body_bytes);
    http_->start(listen_.host, listen_.http_port);
  }
  if (listen_.grpc_port > 0) {
    grpc_ = std::make_unique<GrpcServer>(models_, listen_.max_body_bytes);
    grpc_->start(listen_.host, listen_.grpc_port);
  }
  if (listen_.metrics_port > 0) {
    metrics_ = std::make_unique<HttpServer>(HttpServer::Kind::Metrics, models_, 1 << 16);
    metrics_->start(listen_.host, listen_.metrics_port);
  }
  // Only now: HTTP answered ready while gRPC was still binding, and a client that waited for
  // HTTP's readiness had its first gRPC call refused.
  models_.start_accepting();
}

void Server::shutdown() {
  models_.stop_accepting();  // readiness goes false; new infer calls get 503
  // Generation streams first: the listener's stop would cut a stream mid-way, so every accepted
  // generation finishes and its stream writes its last event before the listeners stop.
  for (GenerativeModel* m : models_.generative()) m->drain();
  for (GenerativeModel* m : models_.generative()) m->wait_streams_closed(kDrainLimit);
  // The batchers drain before the listeners stop: draining runs every forming batch at once and
  // answers every accepted request, while a listener's stop waits for its in-flight requests, so
  // stopping the listeners first waited out each forming batch's whole window (120 s, or forever).
  for (ServedModel* m : models_.all()) m->drain();
  std::thread grpc_stop([this] {
    if (grpc_) grpc_->stop();
  });
  if (http_) http_->stop();
  grpc_stop.join();
  if (metrics_) metrics_->stop();
}

}  // namespace fusor::serve
