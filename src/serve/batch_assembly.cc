#include "serve/batch_assembly.h"

#include <algorithm>
#include <cstring>

#include "fusor/error.h"
#include "ir/float8.h"
#include "ir/half.h"
#include "ir/mx_formats.h"

namespace fusor::serve {
namespace {

void fill(std::byte* dst, int64_t n, DType t, double v) {
  switch (t) {
    case DType::Float32: std::fill_n(reinterpret_cast<float*>(dst), n, static_cast<float>(v)); break;
    case DType::Float64: std::fill_n(reinterpret_cast<double*>(dst), n, v); break;
    case DType::Int64: std::fill_n(reinterpret_cast<int64_t*>(dst), n, static_cast<int64_t>(v)); break;
    case DType::Int32: std::fill_n(reinterpret_cast<int32_t*>(dst), n, static_cast<int32_t>(v)); break;
    case DType::Int8: std::fill_n(reinterpret_cast<int8_t*>(dst), n, static_cast<int8_t>(v)); break;
    case DType::UInt8: std::fill_n(reinterpret_cast<uint8_t*>(dst), n, static_cast<uint8_t>(v)); break;
    case DType::Bool: std::fill_n(reinterpret_cast<bool*>(dst), n, v != 0); break;
    case DType::Float16: std::fill_n(reinterpret_cast<uint16_t*>(dst), n, float_to_half(v)); break;
    case DType::BFloat16: std::fill_n(reinterpret_cast<uint16_t*>(dst), n, float_to_bfloat16(v)); break;
    case DType::Int16: std::fill_n(reinterpret_cast<int16_t*>(dst), n, static_cast<int16_t>(v)); break;
    case DType::UInt16: std::fill_n(reinterpret_cast<uint16_t*>(dst), n, static_cast<uint16_t>(v)); break;
    case DType::UInt32: std::fill_n(reinterpret_cast<uint32_t*>(dst), n, static_cast<uint32_t>(v)); break;
    case DType::UInt64: std::fill_n(reinterpret_cast<uint64_t*>(dst), n, static_cast<uint64_t>(v)); break;
    case DType::Int4: case DType::Int2:  // a byte each
      std::fill_n(reinterpret_cast<int8_t*>(dst), n, static_cast<int8_t>(v));
      break;
    case DType::UInt4: case DType::UInt2: std::fill_n(reinterpret_cast<uint8_t*>(dst), n, static_cast<uint8_t>(v)); break;
    case DType::Float4E2M1: std::fill_n(reinterpret_cast<uint8_t*>(dst), n, float_to_float4e2m1(static_cast<float>(v))); break;
    case DType::Float8E8M0:
      std::fill_n(reinterpret_cast<uint8_t*>(dst), n, float_to_float8e8m0(static_cast<float>(v), E8M0Rounding::Nearest, true));
      break;
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
      std::fill_n(reinterpret_cast<uint8_t*>(dst), n, float_to_float8(static_cast<float>(v), t, true));
      break;
    case DType::Undefined: break;
  }
}

// Copies `src` (dims s) into `dst` (dims d, same rank, d >= s on every axis), the region beyond
// s along `axis` filled with `pad`. Only `axis` may differ; rows are the outer dims before it.
void copy_padded(const Tensor& src, std::byte* dst, const Dims& d, int axis, double pad) {
  const Dims& s = src.dims();
  size_t es = dtype_size(src.dtype());
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= s[a];
  for (size_t a = axis + 1; a < s.size(); ++a) inner *= s[a];
  int64_t src_len = s[axis], dst_len = d[axis];
  const auto* from = static_cast<const std::byte*>(src.raw());
  for (int64_t o = 0; o < outer; ++o) {
    std::byte* row = dst + o * dst_len * inner * es;
    std::memcpy(row, from + o * src_len * inner * es, src_len * inner * es);
    if (dst_len > src_len) fill(row + src_len * inner * es, (dst_len - src_len) * inner, src.dtype(), pad);
  }
}

}  // namespace

int64_t padded_rows(const TrafficClass& cls, bool batched, int64_t rows) {
  if (!batched) return rows;
  for (int64_t p : cls.preferred_batch_sizes)
    if (p >= rows) return p;
  int64_t p = 1;
  while (p < rows) p *= 2;
  return std::max(rows, std::min(p, cls.max_batch));
}

int64_t padded_seq(int64_t seq, int64_t seq_bucket) {
  if (seq < 0) return seq;
  int64_t b = std::max<int64_t>(1, seq_bucket);
  return (seq + b - 1) / b * b;
}

int64_t packed_capacity(int64_t tokens, int64_t token_bucket) {
  int64_t step = std::max<int64_t>(1, token_bucket);
  while (step * 16 < tokens) step *= 2;
  return std::max<int64_t>(1, (tokens + step - 1) / step) * step;
}

std::vector<int64_t> packed_capacities_up_to(int64_t tokens, int64_t token_bucket) {
  std::vector<int64_t> out;
  const int64_t last = packed_capacity(tokens, token_bucket);
  for (int64_t c = packed_capacity(1, token_bucket); c <= last; c = packed_capacity(c + 1, token_bucket)) out.push_back(c);
  return out;
}

Tensors assemble(const Signature& sig, const std::vector<Part>& parts, int64_t padded_rows, int64_t padded_seq,
                 const std::map<std::string, double>& pad_values) {
  Tensors batch;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorInfo& info = sig.inputs[i];
    const Tensor& first = parts[0].inputs->at(info.name);
    if (!sig.batched) {  // one request per run, as it came
      batch[info.name] = first;
      continue;
    }
    Dims dims = first.dims();
    dims[0] = padded_rows;
    if (sig.input_has_seq[i]) dims[1] = padded_seq;
    Tensor out(info.dtype, dims);
    auto pad = pad_values.find(info.name);
    double pad_value = pad == pad_values.end() ? 0.0 : pad->second;
    size_t row_bytes = out.nbytes() / static_cast<size_t>(padded_rows);
    auto* dst = static_cast<std::byte*>(out.raw());
    int64_t row = 0;
    for (const Part& p : parts) {
      const Tensor& t = p.inputs->at(info.name);
      Dims part_dims = dims;
      part_dims[0] = t.dims()[0];
      copy_padded(t, dst + row * row_bytes, part_dims, sig.input_has_seq[i] ? 1 : 0, pad_value);
      row += t.dims()[0];
    }
    for (; row < padded_rows; ++row) std::memcpy(dst + row * row_bytes, dst, row_bytes);
    batch[info.name] = out;
  }
  return batch;
}

std::vector<Tensors> split(const Signature& sig, const Tensors& outputs, const std::vector<Part>& parts) {
  std::vector<Tensors> result(parts.size());
  for (size_t o = 0; o < sig.outputs.size(); ++o) {
    const std::string& name = sig.outputs[o].name;
    auto it = outputs.find(name);
    if (it == outputs.end()) continue;
    const Tensor& all = it->second;
    // Unbatched, a scalar, or one request that ran unpadded (runs_alone): the output is its own.
    if (!sig.batched || all.rank() == 0 || (parts.size() == 1 && !sig.runs_alone.empty())) {
      for (auto& r : result) r[name] = all;
      continue;
    }
    int64_t rows = 0;
    for (const Part& p : parts) rows += p.shape.rows;
    if (all.dims()[0] < rows)  // never read past it: the model's axis 0 was not the batch after all
      throw Error("output '" + name + "' has " + dims_to_string(all.dims()) + " for a batch of " +
                      std::to_string(rows) + " rows: its axis 0 is not the batch",
                  ErrorKind::Runtime);
    int seq_axis = sig.output_seq_axis[o];
    size_t es = dtype_size(all.dtype());
    int64_t row_elems = all.numel() / all.dims()[0];
    int64_t row = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      Dims dims = all.dims();
      dims[0] = parts[p].shape.rows;
      const auto* src = static_cast<const std::byte*>(all.raw()) + row * row_elems * es;
      row += dims[0];
      if (seq_axis > 0 && seq_axis < static_cast<int>(dims.size()) && parts[p].shape.seq > 0 &&
          parts[p].shape.seq < dims[seq_axis]) {
        // Cut the sequence axis: copy `keep` of every `full`-long run along it.
        int64_t outer = 1, inner = 1;
        for (int a = 0; a < seq_axis; ++a) outer *= dims[a];
        for (size_t a = seq_axis + 1; a < dims.size(); ++a) inner *= dims[a];
        int64_t full = dims[seq_axis], keep = parts[p].shape.seq;
        dims[seq_axis] = keep;
        Tensor cut(all.dtype(), dims);
        auto* dst = static_cast<std::byte*>(cut.raw());
        for (int64_t i = 0; i < outer; ++i)
          std::memcpy(dst + i * keep * inner * es, src + i * full * inner * es, keep * inner * es);
        result[p][name] = cut;
      } else {
        Tensor copy(all.dtype(), dims);
        std::memcpy(copy.raw(), src, copy.nbytes());
        result[p][name] = copy;
      }
    }
  }
  return result;
}

}  // namespace fusor::serve
