// Reference kernel of BatchNormalization in inference mode:
// y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (axis 1). Parameters may also
// hold one value per element of a sample (opset < 9 with spatial=0).
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ref/elementwise.h"
#include "kernels/ref/reference.h"

namespace fusor {

void ref::BatchNormalization(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  if (n.attr_int("training_mode", 0) != 0) fail(n, "training_mode=1 is not supported (inference only)");
  visit_float(in[0].dtype(), n, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const Tensor& x = in[0];
    const int64_t batch = x.dim(0), channels = x.dim(1);
    const int64_t spatial = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
    const int64_t count = in[1].numel();
    for (size_t i = 2; i < 5; ++i)
      if (in[i].numel() != count)
        fail(n, "input " + std::to_string(i) + " has " + std::to_string(in[i].numel()) +
                    " elements, input 1 has " + std::to_string(count));
    const bool per_channel = count == channels;
    if (!per_channel && count != channels * spatial)
      fail(n, "parameters have " + std::to_string(count) + " elements, expected " + std::to_string(channels));

    // Parameters in the input's type (ONNX allows their dtypes to differ from X's).
    auto param = [&](size_t i) {
      std::vector<T> v(static_cast<size_t>(count));
      for (int64_t k = 0; k < count; ++k) v[static_cast<size_t>(k)] = static_cast<T>(in[i].scalar_as_double(k));
      return v;
    };
    const std::vector<T> scale = param(1), bias = param(2), mean = param(3), var = param(4);
    const T eps = static_cast<T>(n.attr_float("epsilon", 1e-5f));
    std::vector<T> denom(static_cast<size_t>(count));
    for (size_t k = 0; k < denom.size(); ++k) denom[k] = std::sqrt(var[k] + eps);

    const T* px = x.data<T>();
    T* py = out[0].data<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t base = (b * channels + c) * spatial;
        for (int64_t s = 0; s < spatial; ++s) {
          const size_t k = static_cast<size_t>(per_channel ? c : c * spatial + s);
          py[base + s] = (px[base + s] - mean[k]) / denom[k] * scale[k] + bias[k];
        }
      }
  });
  // Optional statistics outputs (training only in ONNX) echo the running mean and variance.
  for (size_t o = 1; o < out.size(); ++o)
    if (out[o].defined()) {
      const Tensor& src = in[o % 2 == 1 ? 3 : 4];
      require_dtype(n, out[o], src.dtype(), "statistics output");
      std::memcpy(out[o].raw(), src.raw(), src.nbytes());
    }
}

}  // namespace fusor
