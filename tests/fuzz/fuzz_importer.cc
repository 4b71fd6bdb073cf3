// libFuzzer target: arbitrary bytes into the ONNX importer and, when they import, into plan
// building at small shapes. Any exception must be fusor::Error; crashes, hangs and other
// exception types are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fusor/engine.h"
#include "onnx/importer.h"
#include "plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto graph = std::make_shared<const fusor::Graph>(fusor::import_onnx_bytes(bytes, "/nonexistent"));
    std::map<std::string, fusor::Dims> dims;
    for (int id : graph->inputs) {
      const auto& v = graph->values[static_cast<size_t>(id)];
      fusor::Dims d;
      if (v.shape)
        for (const auto& dim : *v.shape) d.push_back(dim.is_static() ? std::min<int64_t>(dim.value, 64) : 2);
      dims[v.name] = d;
    }
    fusor::build_plan(graph, dims, {fusor::KernelChoice::Reference});
  } catch (const fusor::Error&) {
  }
  return 0;
}
