// Tensor storage: what a new tensor costs in resident memory.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "fusor/tensor.h"

namespace fusor {
namespace {

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// A KV cache sized for a 1M-token context held 4.4 GB of zeros it had written, to generate four
// tokens. A large tensor now reads as zeros and takes memory only where it is written.
TEST(TensorMemory, ALargeTensorTakesMemoryOnlyWhereWritten) {
  const int64_t before = resident_kib();
  ASSERT_GT(before, 0);
  Tensor t(DType::Float32, {int64_t{1} << 28});  // 1 GiB
  const int64_t after = resident_kib();
  EXPECT_LT(after - before, 64 * 1024) << "KiB resident for an untouched 1 GiB tensor";
  float* p = t.data<float>();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(p[0], 0.f);
  EXPECT_EQ(p[(int64_t{1} << 28) - 1], 0.f);
  p[12345] = 1.f;
  Tensor copy = t;  // shares the storage
  EXPECT_EQ(copy.data<float>()[12345], 1.f);
}

}  // namespace
}  // namespace fusor
