// Runs ONNX's backend node tests (onnx/backend/test/data/node/*) with both executors, and counts
// every test: passed, failed (with why), or skipped by design (with why). Skipped by design is only
// what no inference model uses: training losses and optimizers, string ops, random ops, sequence and
// optional types, image decoding. Everything else that does not pass is a failure, including ops
// fusor does not implement yet; the failures known today are listed in an expected-failures file,
// so the run fails on a new failure and on an expected one that now passes (keep the list honest).
//
//   fusor_conformance [--filter SUBSTR] [--verbose] [--expected-failures FILE] [--list-failures] DATA_DIR
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// Ops no inference model uses, by the reason they are out of scope.
const std::map<std::string, std::string>& by_design_ops() {
  static const std::map<std::string, std::string> ops = {
      {"NegativeLogLikelihoodLoss", "training loss"}, {"SoftmaxCrossEntropyLoss", "training loss"},
      {"StringNormalizer", "string op"}, {"StringSplit", "string op"}, {"StringConcat", "string op"},
      {"RegexFullMatch", "string op"}, {"LabelEncoder", "string op"},
      {"Bernoulli", "random op"}, {"RandomNormal", "random op"}, {"RandomNormalLike", "random op"},
      {"RandomUniform", "random op"}, {"RandomUniformLike", "random op"}, {"Multinomial", "random op"},
      {"SequenceAt", "sequence type"}, {"SequenceConstruct", "sequence type"}, {"SequenceEmpty", "sequence type"},
      {"SequenceErase", "sequence type"}, {"SequenceInsert", "sequence type"}, {"SequenceLength", "sequence type"},
      {"SequenceMap", "sequence type"}, {"SplitToSequence", "sequence type"},
      {"ConcatFromSequence", "sequence type"}, {"Optional", "optional type"},
      {"OptionalGetElement", "optional type"}, {"OptionalHasElement", "optional type"},
      {"ImageDecoder", "image decoding"},
  };
  return ops;
}

bool is_tensor_of_numbers(const onnx::TypeProto& t) {
  return t.has_tensor_type() && t.tensor_type().elem_type() != onnx::TensorProto::STRING;
}

void graph_by_design_reason(const onnx::GraphProto& g, std::string& reason) {
  for (const auto& n : g.node()) {
    if (!reason.empty()) return;
    if (n.domain() == "ai.onnx.preview.training") reason = "training optimizer (" + n.op_type() + ")";
    else if (auto it = by_design_ops().find(n.op_type()); it != by_design_ops().end())
      reason = it->second + " (" + n.op_type() + ")";
    for (const auto& a : n.attribute())
      if (a.has_g()) graph_by_design_reason(a.g(), reason);
  }
}

// Why a test is out of scope by design, or "" when it is in scope.
std::string by_design_reason(const fs::path& model_path) {
  onnx::ModelProto m;
  if (!m.ParseFromString(read_file(model_path))) return "";  // in scope: the run reports the error
  std::string reason;
  graph_by_design_reason(m.graph(), reason);
  if (!reason.empty()) return reason;
  for (const auto* list : {&m.graph().input(), &m.graph().output()})
    for (const auto& v : *list) {
      if (v.type().has_sequence_type()) return "sequence type (" + v.name() + ")";
      if (v.type().has_optional_type()) return "optional type (" + v.name() + ")";
      if (!is_tensor_of_numbers(v.type())) return "string tensor (" + v.name() + ")";
    }
  return "";
}

// Training-mode semantics (Dropout and BatchNormalization with training_mode=1) are training.
std::string by_design_error(const std::string& msg) {
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
  const bool is_half = got.dtype() == DType::Float16 || got.dtype() == DType::BFloat16;
  const double rtol = got.dtype() == DType::BFloat16 ? 1e-2 : is_half ? 1e-3 : 1e-3;
  const double atol = got.dtype() == DType::BFloat16 ? 1e-2 : is_half ? 1e-3 : 1e-5;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.scalar_as_double(i), b = want.scalar_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if ((is_float || is_half) && std::fabs(a - b) <= atol + rtol * std::fabs(b)) continue;
    std::ostringstream s;
    s << "element " << i << ": got " << a << ", want " << b;
    return s.str();
  }
  return "";
}

// Float inputs that set a Resize's or Upsample's output shape (scales) or its sampling (roi),
// which real models carry as constants: node tests feed them as graph inputs.
std::set<std::string> resize_arguments(const fs::path& model_path) {
  onnx::ModelProto m;
  std::set<std::string> names;
  if (!m.ParseFromString(read_file(model_path))) return names;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Resize" || n.op_type() == "Upsample")
      for (int i = 1; i < n.input_size(); ++i) names.insert(n.input(i));
  return names;
}

// ONNX's node tests store bfloat16 data as UINT16 tensors of its bits: read them as declared.
Tensor as_declared(const Tensor& t, DType declared) {
  if (declared != DType::BFloat16 || t.dtype() != DType::UInt16) return t;
  Tensor out(DType::BFloat16, t.dims());
  if (t.nbytes()) std::memcpy(out.raw(), t.raw(), t.nbytes());
  return out;
}

std::string run_case(const fs::path& dir, bool reference) {
  Engine engine = Engine::load((dir / "model.onnx").string());
  const std::set<std::string> resize_args = resize_arguments(dir / "model.onnx");
  auto infos = engine.inputs();
  for (const auto& data_dir : fs::directory_iterator(dir)) {
    if (!data_dir.is_directory()) continue;
    auto inputs = load_tensors(data_dir.path(), "input_");
    auto expected = load_tensors(data_dir.path(), "output_");
    if (inputs.size() != infos.size()) return "test data has " + std::to_string(inputs.size()) + " inputs";
    for (size_t i = 0; i < infos.size(); ++i) inputs[i] = as_declared(inputs[i], infos[i].dtype);
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
          ((inputs[i].dtype() == DType::Int64 || inputs[i].dtype() == DType::Int32) && inputs[i].rank() == 1) ||
          (inputs[i].rank() == 1 && resize_args.count(infos[i].name)))
        options.frozen_inputs[infos[i].name] = inputs[i];
    Session session = engine.session(dims, options);
    auto outputs = session.run(feeds);
    auto out_infos = engine.outputs();
    for (size_t i = 0; i < expected.size() && i < out_infos.size(); ++i) {
      std::string why = compare(outputs.at(out_infos[i].name), as_declared(expected[i], out_infos[i].dtype));
      if (!why.empty()) return (reference ? "reference: " : "fast: ") + out_infos[i].name + " " + why;
    }
  }
  return "";
}

std::map<std::string, std::string> read_expected_failures(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream f(path);
  if (!f) throw Error("cannot read expected failures file " + path);
  std::string line;
  while (std::getline(f, line)) {
    auto hash = line.find('#');
    std::string note = hash == std::string::npos ? "" : line.substr(hash + 1);
    std::istringstream words(line.substr(0, hash));
    std::string name;
    if (words >> name) out[name] = note;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter, data, expected_path;
  bool verbose = false, list_failures = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--expected-failures" && i + 1 < argc) expected_path = argv[++i];
    else if (a == "--verbose") verbose = true;
    else if (a == "--list-failures") list_failures = true;
    else data = a;
  }
  if (data.empty() || !fs::is_directory(data)) {
    std::cerr << "usage: fusor_conformance [--filter SUBSTR] [--verbose] [--expected-failures FILE] "
                 "[--list-failures] ONNX_NODE_TEST_DIR\n";
    return 2;
  }
  std::map<std::string, std::string> expected;
  try {
    if (!expected_path.empty()) expected = read_expected_failures(expected_path);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(data))
    if (e.is_directory() && e.path().filename().string().find(filter) != std::string::npos) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());

  int passed = 0, failed = 0, skipped = 0, unexpected = 0;
  std::map<std::string, int> skip_reasons, fail_reasons;
  std::ostream& log = list_failures ? std::cerr : std::cout;
  for (const auto& dir : cases) {
    const std::string name = dir.filename().string();
    std::string skip = by_design_reason(dir / "model.onnx");
    std::string why;
    if (skip.empty()) {
      try {
        why = run_case(dir, true);
        if (why.empty()) why = run_case(dir, false);
      } catch (const std::exception& e) {
        skip = by_design_error(e.what());
        if (skip.empty()) why = e.what();
      }
    }
    const bool is_expected = expected.count(name) != 0;
    if (!skip.empty()) {
      ++skipped;
      ++skip_reasons[skip.substr(0, skip.find(" ("))];
      log << "SKIP " << name << ": " << skip << "\n";
    } else if (why.empty()) {
      ++passed;
      if (is_expected) {
        ++unexpected;
        log << "PASS " << name << ": listed as an expected failure, now passes (remove it from the list)\n";
      } else if (verbose) {
        log << "PASS " << name << "\n";
      }
    } else {
      ++failed;
      if (why.find('\n') != std::string::npos) why = why.substr(0, why.find('\n'));
      std::string kind = why.find("not implemented yet") != std::string::npos ? "op not implemented yet"
                         : why.find("unsupported operator") != std::string::npos ? "op not supported"
                         : why.find("unsupported dtype") != std::string::npos ? "dtype not supported"
                                                                                   : "wrong result or error";
      ++fail_reasons[kind];
      if (!is_expected) ++unexpected;
      log << "FAIL " << name << (is_expected ? " (expected)" : "") << ": " << why << "\n";
      if (list_failures) std::cout << name << "  # " << kind << "\n";
    }
  }
  log << passed << " passed, " << failed << " failed, " << skipped << " skipped by design, of "
      << cases.size() << " node tests\n";
  log << "failed:";
  for (const auto& [reason, count] : fail_reasons) log << " " << count << " " << reason << ";";
  log << "\nskipped by design:";
  for (const auto& [reason, count] : skip_reasons) log << " " << count << " " << reason << ";";
  log << "\n";
  if (!expected_path.empty())
    log << unexpected << " differ from " << expected_path << " (new failures, or expected failures that pass)\n";
  if (list_failures) return 0;
  const bool ok = expected_path.empty() ? failed == 0 : unexpected == 0;
  return ok && passed > 0 ? 0 : 1;
}
