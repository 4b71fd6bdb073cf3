#include "serve/row_coupling.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "fusor/error.h"
#include "serve/batch_assembly.h"

namespace fusor::serve {
namespace {

constexpr int64_t kProbeLength = 16;  // the other symbolic dims: short, as the precision gate's

// Row `r` of `t` along axis 0, as a tensor of one row.
Tensor row_of(const Tensor& t, int64_t r) {
  Dims dims = t.dims();
  dims[0] = 1;
  Tensor row(t.dtype(), dims);
  std::memcpy(row.raw(), static_cast<const std::byte*>(t.raw()) + r * row.nbytes(), row.nbytes());
  return row;
}

// How `together` (a row of the batch's output) differs from `alone`, or "" when it does not:
// float32 within 1e-3 of alone's scale (kernels may differ between batch sizes by rounding),
// other types exactly.
std::string difference(const Tensor& together, const Tensor& alone) {
  if (together.dims() != alone.dims()) return "shape " + dims_to_string(together.dims()) + " against " + dims_to_string(alone.dims());
  if (together.dtype() != DType::Float32)
    return std::memcmp(together.raw(), alone.raw(), alone.nbytes()) == 0 ? "" : "different values";
  const float* a = alone.data<float>();
  const float* b = together.data<float>();
  float scale = 0, worst = 0;
  for (int64_t i = 0; i < alone.numel(); ++i) {
    scale = std::max(scale, std::abs(a[i]));
    const float d = std::abs(a[i] - b[i]);
    worst = std::isnan(d) && !(std::isnan(a[i]) && std::isnan(b[i])) ? INFINITY : std::max(worst, d);
  }
  if (worst <= 1e-3f * (1 + scale)) return "";
  std::ostringstream why;
  why << std::setprecision(3) << "values off by " << worst << " (largest alone " << scale << ")";
  return why.str();
}

bool is_integer(DType t) {
  switch (t) {
    case DType::Int64: case DType::Int32: case DType::Int16: case DType::Int8:
    case DType::UInt64: case DType::UInt32: case DType::UInt16: case DType::UInt8: return true;
    default: return false;
  }
}

// Sample inputs fill an integer input that indexes no table with zeros, the same in both rows,
// and a model that mixes rows (Cast(ids) minus their mean over the batch) then looks independent.
// Such an input's second row takes ones instead; masks and positions keep their meaning.
void make_rows_differ(const std::string& name, Tensor& t) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!is_integer(t.dtype()) || t.rank() == 0 || t.dims()[0] != 2 || lower.find("mask") != std::string::npos ||
      lower.find("position") != std::string::npos)
    return;
  const size_t row = t.nbytes() / 2, width = t.nbytes() / static_cast<size_t>(t.numel());
  std::byte* second = static_cast<std::byte*>(t.raw()) + row;
  if (std::memcmp(t.raw(), second, row) != 0) return;
  std::memset(second, 0, row);
  for (size_t i = 0; i < row; i += width) second[i] = std::byte{1};  // little-endian 1 of any width
}

}  // namespace

std::string rows_coupled_in_a_probe(const Engine& engine, const SessionOptions& options) {
  try {
    const auto two_dims = engine.bind_dims({}, 2, kProbeLength);
    const auto one_dims = engine.bind_dims({}, 1, kProbeLength);
    auto two = engine.sample_inputs(two_dims, 1);
    for (auto& [name, t] : two) make_rows_differ(name, t);
    Session both = engine.session(two_dims, options);
    const auto together = both.run(two);
    Session one = engine.session(one_dims, options);
    for (int64_t r = 0; r < 2; ++r) {
      std::map<std::string, Tensor> inputs;
      for (const auto& [name, t] : two) inputs[name] = row_of(t, r);
      const auto alone = one.run(inputs);
      for (const auto& [name, out] : alone) {
        const Tensor& all = together.at(name);
        if (all.rank() == 0 && out.rank() == 0) {
          // One value for the whole batch, which every request gets: fine for a constant, not for
          // a sum over the batch's rows.
          if (std::string d = difference(all, out); !d.empty())
            return "output '" + name + "' is one value for the whole batch, and a row alone gets another: " + d;
          continue;
        }
        if (all.rank() == 0 || all.dims()[0] != 2)
          return "output '" + name + "' has " + dims_to_string(all.dims()) + " for a batch of 2 rows";
        if (std::string d = difference(row_of(all, r), out); !d.empty())
          return "output '" + name + "' of a row run beside another differs from the row alone: " + d;
      }
    }
  } catch (const Error&) {
    return "";  // shapes the model does not take: its requests will say what it does take
  }
  return "";
}

std::string padding_changes_outputs(const Engine& engine, const Signature& sig, const SessionOptions& options,
                                    const std::map<std::string, double>& pad_values) {
  constexpr int64_t kLength = 5, kPadded = 16;  // a few tokens, and most of a bucket of padding
  try {
    const auto own_dims = engine.bind_dims({}, 1, kLength);
    const Tensors request = engine.sample_inputs(own_dims, 2);
    const Tensors alone = engine.session(own_dims, options).run(request);
    const std::vector<Part> parts = {{&request, sig.check(request, 1)}};
    const Tensors batch = assemble(sig, parts, 1, kPadded, pad_values);
    std::map<std::string, Dims> padded_dims;
    for (const auto& [name, t] : batch) padded_dims[name] = t.dims();
    const Tensors padded = split(sig, engine.session(padded_dims, options).run(batch), parts)[0];
    for (const auto& [name, out] : alone)
      if (std::string d = difference(padded.at(name), out); !d.empty())
        return "output '" + name + "' of a request padded from " + std::to_string(kLength) + " to " +
               std::to_string(kPadded) + " tokens differs from the request alone: " + d;
  } catch (const std::exception&) {
    return "";  // shapes the model does not take: nothing is known against padding
  }
  return "";
}

}  // namespace fusor::serve
