#include "onnx/external_data.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace fusor {
namespace {

void add_location(const onnx::TensorProto& t, std::set<std::string>& out) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
  for (const auto& kv : t.external_data())
    if (kv.key() == "location" && !kv.value().empty()) out.insert(kv.value());
}

void walk(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (const auto& t : g.initializer()) add_location(t, out);
  for (const auto& s : g.sparse_initializer()) add_location(s.values(), out), add_location(s.indices(), out);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_t()) add_location(a.t(), out);
      for (const auto& t : a.tensors()) add_location(t, out);
      if (a.has_g()) walk(a.g(), out);
      for (const auto& sub : a.graphs()) walk(sub, out);
    }
}

}  // namespace

std::vector<std::string> external_data_files(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::ifstream f(model_path, std::ios::binary);
  onnx::ModelProto model;
  if (!f || !model.ParseFromIstream(&f)) return {};
  std::set<std::string> locations;
  walk(model.graph(), locations);
  std::set<std::string> files;
  const fs::path base = fs::weakly_canonical(fs::path(model_path).parent_path().empty() ? fs::path(".")
                                                                                        : fs::path(model_path).parent_path());
  for (const auto& location : locations) {
    const fs::path rel = fs::weakly_canonical(base / location).lexically_relative(base);
    if (!rel.empty() && *rel.begin() != "..") files.insert(rel.string());  // outside: the import refuses it
  }
  return {files.begin(), files.end()};
}

}  // namespace fusor
