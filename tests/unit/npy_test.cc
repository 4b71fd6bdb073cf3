#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "fusor/npy.h"

namespace fusor {

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  auto dir = std::filesystem::temp_directory_path();
  for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Int8, DType::UInt8, DType::Bool,
                  DType::Float16, DType::BFloat16, DType::Int16, DType::UInt16, DType::UInt32, DType::UInt64})
    for (Dims dims : {Dims{}, Dims{5}, Dims{2, 3}, Dims{0, 4}}) {
      Tensor a(t, dims);
      auto* bytes = static_cast<uint8_t*>(a.raw());
      for (size_t i = 0; i < a.nbytes(); ++i) bytes[i] = t == DType::Bool ? (i % 2) : static_cast<uint8_t>(i * 7);
      std::string path = (dir / "fusor_npy_test.npy").string();
      write_npy(path, a);
      Tensor b = read_npy(path);
      ASSERT_EQ(b.dtype(), t);
      ASSERT_EQ(b.dims(), dims);
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
    }
}

TEST(Npy, RejectsCorruptFilesWithAClearError) {
  auto expect_error = [](const std::string& bytes, const std::string& fragment) {
    try {
      parse_npy(bytes, "x.npy");
      FAIL() << "accepted: " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error("", "magic");
  expect_error(std::string("\x93NUMPY\x01\x00\xff\xff{}", 12), "truncated");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 1000000), }";
  std::string h(1, static_cast<char>(header.size()));
  expect_error(std::string("\x93NUMPY\x01\x00", 8) + h + std::string(1, '\0') + header, "needs");
  std::string c8 = "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }";
  expect_error(std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(c8.size()) + std::string(1, '\0') + c8 + "abcdefgh",
               "'<c8' is not supported");
}

// np.save writes a transposed array (a.T) column-major, as it lies: `--input x=x.npy` refused it.
TEST(Npy, ReadsFortranOrderAsRowMajor) {
  // a = [[0, 1, 2], [3, 4, 5]] as float32, stored column-major: 0, 3, 1, 4, 2, 5.
  std::string header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
  header += "\n";
  const float column_major[] = {0, 3, 1, 4, 2, 5};
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + std::string(1, '\0') + header +
                      std::string(reinterpret_cast<const char*>(column_major), sizeof column_major);
  const Tensor t = parse_npy(bytes, "t.npy");
  ASSERT_EQ(t.dims(), (Dims{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], static_cast<float>(i)) << i;
}

}  // namespace fusor
