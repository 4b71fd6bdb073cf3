// A 1x1 convolution on a 1x1 image is a GEMM: Y[N, OC] = X[N, C] x W[OC, C]^T. Squeeze-and-
// excitation blocks (MobileNetV3, EfficientNet) run two per block on the pooled channels. As
// oneDNN convolutions each costs ~10 us at batch 1, mostly the convolution's own set-up; as a GEMM
// on constant weights it runs on fusor's one-row GEMV or panels (matmul_onednn.h), on the pool.
// Named "conv1x1_f32[_bias][_residual][_act]" and what runs it ("_gemv", "_panel", "_onednn_packed").
#include <memory>
#include <string>
#include <utility>

#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/matmul_onednn.h"
#include "kernels/cpu/onednn_post_ops.h"

namespace fusor::cpu {

using dnnl::memory;
using dt = memory::data_type;

std::unique_ptr<Kernel> make_pointwise_conv_gemm(const KernelRequest& r, const ConvEpilogue& epi) {
  const auto own = own_conv_operands(r, epi);
  if (!own || r.inputs[1].dims.size() != 4) return nullptr;
  const Dims& x = r.inputs[0].dims;
  const Dims& w = r.inputs[1].dims;
  const Dims& y = r.outputs[0].dims;
  const auto shape = onednn_conv_shape(r.node, x, w, y);
  if (!shape || shape->group != 1 || x[2] != 1 || x[3] != 1 || y[2] != 1 || y[3] != 1 || w[2] != 1 || w[3] != 1 ||
      shape->pad_l != memory::dims{0, 0} || shape->pad_r != memory::dims{0, 0})
    return nullptr;
  const auto alg = onednn::eltwise_for(epi.activation);
  if (epi.activation != "none" && !alg) return nullptr;
  const int64_t N = x[0], C = shape->C, OC = shape->OC;

  OnednnMatmul::Spec spec;
  spec.src = memory::desc({N, C}, dt::f32, memory::dims{C, 1});
  spec.weights = memory::desc({C, OC}, dt::f32, memory::dims{1, C});  // W[OC, C] read transposed
  spec.dst = memory::desc({N, OC}, dt::f32, memory::dims{OC, 1});
  spec.const_weights = own->weights->data<float>();
  if (own->bias) {
    spec.bias = memory::desc({1, OC}, dt::f32, memory::dims{OC, 1});
    spec.const_bias = own->bias->data<float>();  // copied
  }
  // The convolution's order: residual (its sum post-op), then the activation.
  if (epi.residual >= 0) {
    spec.binary_mds.push_back(spec.dst);
    spec.binary_indices.push_back(0);
    spec.post_ops.append_binary(dnnl::algorithm::binary_add, spec.dst);
  }
  if (alg) {
    spec.post_ops.append_eltwise(1.f, *alg, epi.alpha, 0.f);
  }
  try {
    OnednnMatmul m(std::move(spec));
    const std::string name = std::string("conv1x1_f32") + (own->bias ? "_bias" : "") +
                             (epi.residual >= 0 ? "_residual" : "") + (alg ? "_" + epi.activation : "") +
                             m.name_suffix();
    return make_epilogue_matmul_kernel(std::move(m), epi.residual, name);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
