// Runs ONNX's backend node tests (onnx/backend/test/data/node/*) with both executors.
// A test is in scope when every op in its model is one fusor claims (the op table); tests
// whose tensors use dtypes fusor does not compute with (float16, string, ...) are skipped and
// counted as such. Ends with "N passed, N failed, N skipped" and exits non-zero on failure.
//
//   fusor_conformance [--filter SUBSTR] [--verbose] DATA_DIR
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "fusor/engine.h"
#include "ir/graph.h"
#include "onnx/tensor_proto.h"

namespace fs = std::filesystem;
using namespace fusor;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Reads a test's model proto and reports why it is out of scope, or "" when in scope.
std::string scope_problem(const fs::path& model_path) {
  onnx::ModelProto m;
  if (!m.ParseFromString(read_file(model_path))) return "unparsable model";
  for (const auto& n : m.graph().node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return "domain " + n.domain();
    if (n.op_type() != "Constant" && !op_from_name(n.op_type())) return "op " + n.op_type();
  }
  return "";
}

// Out of scope by design: dtypes fusor does not compute with, and training-mode semantics.
std::string skip_reason(const std::string& msg) {
  if (msg.find("unsupported dtype") != std::string::npos) return "unsupported dtype";
  if (msg.find("not a tensor") != std::string::npos) return "non-tensor type";
  if (msg.find("training_mode") != std::string::npos) return "training mode";
  return "";
}

std::vector<Tensor> load_tensors(const fs::path& dir, const char* prefix) {
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / (std::string(prefix) + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    onnx::TensorProto t;
    if (!t.ParseFromString(read_file(p))) throw Error("cannot parse " + p.string());
    out.push_back(tensor_from_proto(t, dir.string()));
  }
  return out;
}

// Returns "" when `got` matches `want`: exact for integers and bools, |a-b| <= atol + rtol*|b| for floats.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + " != " + dtype_name(want.dtype());
  if (got.dims() != want.dims()) return "shape " + dims_to_string(got.dims()) + " != " + dims_to_string(want.dims());
  const bool is_float = got.dtype() == DType::Float32 || got.dtype() == DType::Float64;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.scalar_as_double(i), b = want.scalar_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (is_float && std::fabs(a - b) <= 1e-5 + 1e-3 * std::fabs(b)) continue;
    std::ostringstream s;
    s << "element " << i << ": got " << a << ", want " << b;
    return s.str();
  }
  return "";
}

std::string run_case(const fs::path& dir, bool reference) {
  Engine engine = Engine::load((dir / "model.onnx").string());
  auto infos = engine.inputs();
  for (const auto& data_dir : fs::directory_iterator(dir)) {
    if (!data_dir.is_directory()) continue;
    auto inputs = load_tensors(data_dir.path(), "input_");
    auto expected = load_tensors(data_dir.path(), "output_");
    if (inputs.size() != infos.size()) return "test data has " + std::to_string(inputs.size()) + " inputs";
    std::map<std::string, Dims> dims;
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < infos.size(); ++i) {
      dims[infos[i].name] = inputs[i].dims();
      feeds[infos[i].name] = inputs[i];
    }
    SessionOptions options;
    options.reference = reference;
    // Node tests feed shape-determining values (Slice starts, Reshape targets, axes) as graph
    // inputs; real models carry them as constants. Freeze small integer inputs so they fold.
    for (size_t i = 0; i < infos.size(); ++i)
      if (inputs[i].rank() == 0 ||
          ((inputs[i].dtype() == DType::Int64 || inputs[i].dtype() == DType::Int32) && inputs[i].rank() == 1))
        options.frozen_inputs[infos[i].name] = inputs[i];
    Session session = engine.session(dims, options);
    auto outputs = session.run(feeds);
    auto out_infos = engine.outputs();
    for (size_t i = 0; i < expected.size() && i < out_infos.size(); ++i) {
      std::string why = compare(outputs.at(out_infos[i].name), expected[i]);
      if (!why.empty()) return (reference ? "reference: " : "fast: ") + out_infos[i].name + " " + why;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter, data;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--verbose") verbose = true;
    else data = a;
  }
  if (data.empty() || !fs::is_directory(data)) {
    std::cerr << "usage: fusor_conformance [--filter SUBSTR] [--verbose] ONNX_NODE_TEST_DIR\n";
    return 2;
  }
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(data))
    if (e.is_directory() && e.path().filename().string().find(filter) != std::string::npos) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());

  int passed = 0, failed = 0, skipped = 0, out_of_scope = 0;
  std::map<std::string, int> skip_reasons;
  for (const auto& dir : cases) {
    std::string name = dir.filename().string();
    if (!scope_problem(dir / "model.onnx").empty()) {
      ++out_of_scope;
      continue;
    }
    std::string why;
    try {
      why = run_case(dir, true);
      if (why.empty()) why = run_case(dir, false);
    } catch (const std::exception& e) {
      if (std::string reason = skip_reason(e.what()); !reason.empty()) {
        ++skipped;
        ++skip_reasons[reason];
        if (verbose) std::cout << "SKIP " << name << ": " << e.what() << "\n";
        continue;
      }
      why = e.what();
    }
    if (why.empty()) {
      ++passed;
      if (verbose) std::cout << "PASS " << name << "\n";
    } else {
      ++failed;
      std::cout << "FAIL " << name << ": " << why << "\n";
    }
  }
  std::cout << out_of_scope << " node tests use ops fusor does not claim; skipped:";
  for (const auto& [reason, count] : skip_reasons) std::cout << " " << count << " " << reason << ";";
  std::cout << "\n";
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed == 0 && passed > 0 ? 0 : 1;
}
