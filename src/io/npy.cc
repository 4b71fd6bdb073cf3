#include "fusor/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "io/atomic_file.h"

namespace fusor {
namespace {

struct Descr {
  const char* code;
  DType dtype;
};
// bfloat16 has no numpy dtype: ml_dtypes saves it as '<V2' (two opaque bytes), so '<V2' reads as
// bfloat16 and bfloat16 writes as '<V2' (numpy.load(...).view(ml_dtypes.bfloat16) gets it back).
constexpr Descr kDescrs[] = {{"<f4", DType::Float32}, {"<f8", DType::Float64}, {"<i8", DType::Int64},
                             {"<i4", DType::Int32},   {"|i1", DType::Int8},    {"|u1", DType::UInt8},
                             {"|b1", DType::Bool},    {"<f2", DType::Float16}, {"<V2", DType::BFloat16},
                             {"<i2", DType::Int16},   {"<u2", DType::UInt16},  {"<u4", DType::UInt32},
                             {"<u8", DType::UInt64}};

// numpy writes a column-major array (np.save of a transposed one: `a.T`) as it lies, first axis
// fastest; tensors are row-major. Element by element, an odometer over the row-major index.
void copy_from_fortran_order(const char* src, Tensor& t) {
  const Dims& dims = t.dims();
  const size_t esize = dtype_size(t.dtype()), rank = dims.size();
  std::vector<int64_t> stride(rank, 1), idx(rank, 0);  // column-major strides, in elements
  for (size_t k = 1; k < rank; ++k) stride[k] = stride[k - 1] * dims[k - 1];
  char* out = static_cast<char*>(t.raw());
  int64_t offset = 0;  // of idx in the column-major data
  for (int64_t i = 0; i < t.numel(); ++i) {
    std::memcpy(out + static_cast<size_t>(i) * esize, src + static_cast<size_t>(offset) * esize, esize);
    for (size_t k = rank; k-- > 0;) {  // the last axis moves fastest in row-major order
      offset += stride[k];
      if (++idx[k] < dims[k]) break;
      offset -= stride[k] * dims[k];
      idx[k] = 0;
    }
  }
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  auto bad = [&](const std::string& why) { return Error(what + ": not a valid .npy file (" + why + ")"); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw bad("missing magic");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw bad("truncated header");
    uint32_t n;
    std::memcpy(&n, bytes.data() + 8, 4);
    header_len = n;
    header_start = 12;
  } else {
    throw bad("unknown version " + std::to_string(major));
  }
  if (header_start + header_len > bytes.size()) throw bad("truncated header");
  std::string header = bytes.substr(header_start, header_len);

  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'"))) throw bad("no descr");
  std::string descr = m[1];
  if (descr == "|V2") descr = "<V2";  // byte order means nothing to opaque bytes
  DType dtype = DType::Undefined;
  for (const auto& d : kDescrs)
    if (descr == d.code || (descr[0] == '=' && descr.substr(1) == std::string(d.code).substr(1))) dtype = d.dtype;
  if (dtype == DType::Undefined) throw Error(what + ": .npy dtype '" + descr + "' is not supported");
  const bool fortran = std::regex_search(header, m, std::regex("'fortran_order':\\s*True"));
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw bad("no shape");
  Dims dims;
  std::stringstream shape(m[1].str());
  std::string item;
  while (std::getline(shape, item, ',')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      size_t used = 0;
      long long d = std::stoll(item, &used);
      if (d < 0) throw bad("negative dimension");
      dims.push_back(d);
    } catch (const std::logic_error&) {
      throw bad("bad shape '" + m[1].str() + "'");
    }
  }
  size_t data_start = header_start + header_len;
  // Guard the multiplication against absurd shapes before allocating.
  long double expected = dtype_size(dtype);
  for (int64_t d : dims) expected *= static_cast<long double>(d);
  if (expected != static_cast<long double>(bytes.size() - data_start))
    throw bad("data is " + std::to_string(bytes.size() - data_start) + " bytes but shape " +
              dims_to_string(dims) + " needs " + std::to_string(static_cast<unsigned long long>(expected)));
  Tensor t(dtype, dims);
  if (fortran && dims.size() > 1) copy_from_fortran_order(bytes.data() + data_start, t);
  else if (t.nbytes()) std::memcpy(t.raw(), bytes.data() + data_start, t.nbytes());
  return t;
}

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::stringstream buf;
  buf << f.rdbuf();
  return parse_npy(buf.str(), path);
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* code = nullptr;
  for (const auto& d : kDescrs)
    if (d.dtype == t.dtype()) code = d.code;
  if (!code) throw Error(std::string("cannot write dtype ") + dtype_name(t.dtype()) + " to .npy");
  std::string shape = "(";
  for (int64_t d : t.dims()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 1), shape.back() = ')';
  else shape += ")";
  if (t.rank() == 1) shape = "(" + std::to_string(t.dims()[0]) + ",)";
  std::string header = "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  const uint16_t len = static_cast<uint16_t>(header.size());
  std::string prefix("\x93NUMPY\x01\x00", 8);
  prefix.append(reinterpret_cast<const char*>(&len), 2);
  prefix += header;
  // Whole or not at all: SIGTERM during a 600 MB write left a truncated file np.load refused.
  if (!write_file_atomically(path, {prefix, std::string_view(static_cast<const char*>(t.raw()), t.nbytes())}))
    throw Error("cannot write " + path);
}

}  // namespace fusor
