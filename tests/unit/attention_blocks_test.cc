// The attention kernels' building blocks (kernels/cpu/attention_blocks.h) against plain loops:
// the K^T transpose over whole 8x8 register tiles, their edges and strided rows.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/attention_blocks.h"

namespace fusor {
namespace {

// Every shape the kernels give it: head dims 20, 32, 64 and 128, cache blocks and tiles of keys
// that are and are not whole tiles, one key (a decode step).
TEST(AttentionBlocks, TransposeMatchesThePlainLoopForEveryShape) {
  for (int64_t rows : {1, 3, 8, 13, 16, 40, 128})
    for (int64_t cols : {1, 7, 8, 20, 32, 64, 128}) {
      const int64_t lds = cols + 5, ldd = rows + 11;  // strided: the tile's padding columns stay
      std::vector<float> src(static_cast<size_t>(rows * lds));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f - 7.f;
      std::vector<float> dst(static_cast<size_t>(cols * ldd), -1.f);
      cpu::attention::transpose(src.data(), lds, rows, cols, dst.data(), ldd);
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t j = 0; j < ldd; ++j) {
          const float want = j < rows ? src[static_cast<size_t>(j * lds + c)] : -1.f;
          ASSERT_EQ(dst[static_cast<size_t>(c * ldd + j)], want) << rows << "x" << cols << " at " << c << "," << j;
        }
    }
}

}  // namespace
}  // namespace fusor
