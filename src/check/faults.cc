#include "check/faults.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/internals.h"
#include "ir/graph.h"
#include "kernels/backend.h"
#include "passes/fused_kinds.h"

namespace fusor {
namespace {

const std::vector<std::string> kKinds = {"wrong_epsilon", "dropped_bias",  "reduced_precision", "off_by_one_mask",
                                         "stale_buffer",  "wrong_zero_point", "saturating_product", "reversed_rotation"};

bool quantized(DType t) { return t == DType::UInt8 || t == DType::Int8; }

bool applies(const std::string& kind, const Node& node, const KernelRequest& r) {
  if (kind == "wrong_epsilon") return is_fused_kind(node, FusedKind::LayerNorm);
  // Only a LayerNorm's beta: a FusedMatMul packs its bias into the oneDNN primitive when the plan
  // is built, so zeroing the operand at run time would change nothing and prove nothing.
  if (kind == "dropped_bias")
    return is_fused_kind(node, FusedKind::LayerNorm) && r.inputs.size() > 2 && node.attr_int("has_bias", 1) != 0;
  if (kind == "off_by_one_mask") return is_fused_kind(node, FusedKind::Attention) && r.inputs.size() > 3;
  if (kind == "reversed_rotation") return is_fused_kind(node, FusedKind::Rotary) && r.inputs.size() > 2;
  if (kind == "wrong_zero_point" || kind == "saturating_product")
    return !r.outputs.empty() && quantized(r.outputs[0].dtype);
  return true;
}

class FaultyKernel final : public Kernel {
 public:
  FaultyKernel(std::string kind, std::unique_ptr<Kernel> inner) : kind_(std::move(kind)), inner_(std::move(inner)) {}

  size_t scratch_bytes() const override { return inner_->scratch_bytes(); }
  std::string name() const override { return inner_->name() + "+fault:" + kind_; }
  bool uses_openmp() const override { return inner_->uses_openmp(); }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    std::vector<Tensor> inputs(in.begin(), in.end());
    if (kind_ == "dropped_bias") {
      inputs[2] = in[2].clone();
      std::memset(inputs[2].raw(), 0, inputs[2].nbytes());
    } else if (kind_ == "off_by_one_mask") {
      inputs[3] = in[3].clone();
      shift_last_axis(inputs[3]);
    } else if (kind_ == "reversed_rotation") {  // sin read negated: each pair turns by -angle
      inputs[2] = in[2].clone();
      float* s = inputs[2].data<float>();
      for (int64_t i = 0; i < inputs[2].numel(); ++i) s[i] = -s[i];
    }
    inner_->run(inputs, out, scratch);
    if (kind_ == "reduced_precision")
      for (Tensor& t : out)
        if (t.defined() && t.dtype() == DType::Float32) round_to_bf16(t);
    if (kind_ == "wrong_zero_point")
      for (Tensor& t : out) add_to_quantized(t, 1, -1e9, 1e9);
    if (kind_ == "saturating_product")
      for (Tensor& t : out) add_to_quantized(t, 0, -kSaturatedSteps, kSaturatedSteps);
    if (kind_ == "stale_buffer") {
      std::vector<Tensor> fresh;
      for (Tensor& t : out) fresh.push_back(t.defined() ? t.clone() : Tensor());
      if (!previous_.empty())
        for (size_t i = 0; i < out.size(); ++i)
          if (out[i].defined() && previous_[i].nbytes() == out[i].nbytes())
            std::memcpy(out[i].raw(), previous_[i].raw(), out[i].nbytes());
      previous_ = std::move(fresh);
    }
  }

 private:
  static void shift_last_axis(Tensor& t) {
    if (t.dtype() != DType::Float32 || t.dims().empty() || t.dims().back() < 2) return;
    const int64_t n = t.dims().back(), rows = t.numel() / n;
    float* p = t.data<float>();
    for (int64_t r = 0; r < rows; ++r) std::memmove(p + r * n + 1, p + r * n, static_cast<size_t>(n - 1) * sizeof(float));
  }
  // Without VNNI a u8 x s8 pair sum beyond int16 saturates (int8_support.h): the results of
  // large accumulations stop this many steps from the zero point's neighbourhood.
  static constexpr double kSaturatedSteps = 24;

  // Each quantized value v becomes clamp(v + shift, lo, hi) around the median value (a stand-in
  // for the zero point), within the type's range.
  static void add_to_quantized(Tensor& t, double shift, double lo, double hi) {
    if (!t.defined() || !quantized(t.dtype()) || t.numel() == 0) return;
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.scalar_as_double(i);
    std::vector<double> sorted = v;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2), sorted.end());
    const double mid = sorted[sorted.size() / 2];
    const double min = t.dtype() == DType::Int8 ? -128 : 0, max = t.dtype() == DType::Int8 ? 127 : 255;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = std::clamp(std::clamp(v[static_cast<size_t>(i)] + shift, mid + lo, mid + hi), min, max);
      if (t.dtype() == DType::Int8) t.data<int8_t>()[i] = static_cast<int8_t>(x);
      else t.data<uint8_t>()[i] = static_cast<uint8_t>(x);
    }
  }
  static void round_to_bf16(Tensor& t) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &p[i], 4);
      bits = (bits + 0x8000u) & 0xFFFF0000u;
      std::memcpy(&p[i], &bits, 4);
    }
  }

  std::string kind_;
  std::unique_ptr<Kernel> inner_;
  std::vector<Tensor> previous_;
};

}  // namespace

std::vector<std::string> fault_kinds() { return kKinds; }

FaultSpec parse_fault(const std::string& text) {
  FaultSpec spec;
  size_t at = text.find('@');
  spec.kind = text.substr(0, at);
  if (at != std::string::npos) spec.item = text.substr(at + 1);
  if (std::find(kKinds.begin(), kKinds.end(), spec.kind) == kKinds.end()) {
    std::string known;
    for (const auto& k : kKinds) known += (known.empty() ? "" : ", ") + k;
    throw Error("unknown fault kind '" + spec.kind + "' (known: " + known + ")");
  }
  if (at != std::string::npos && spec.item.empty()) throw Error("--inject-fault '" + text + "' names no item after '@'");
  return spec;
}

std::optional<std::vector<std::string>> fault_targets(const Engine& engine, const std::map<std::string, Dims>& dims,
                                                      const FusionConfig& fusion, const std::string& kind) {
  std::vector<std::string> names;
  InternalSessionOptions internal;
  internal.wrap_fused_kernel = [&](const KernelRequest& r, std::unique_ptr<Kernel> chosen, const Backend&) {
    if (applies(kind, r.node, r) && std::find(names.begin(), names.end(), r.node.name) == names.end())
      names.push_back(r.node.name);
    return chosen;
  };
  SessionOptions options;
  options.fusion = fusion;
  Session session = build_session(engine, dims, options, internal);
  if (!planned_per_run(session).empty()) return std::nullopt;
  return names;
}

KernelWrapper make_fault_injector(const FaultSpec& spec, std::shared_ptr<std::string> target) {
  return [spec, target](const KernelRequest& r, std::unique_ptr<Kernel> chosen,
                        const Backend& backend) -> std::unique_ptr<Kernel> {
    const Node& node = r.node;
    // The named item, else the first one the kind applies to (the same in every later plan).
    const std::string& wanted = spec.item.empty() ? *target : spec.item;
    if (!wanted.empty() && node.name != wanted) return chosen;
    if (!applies(spec.kind, node, r)) return chosen;
    *target = node.name;
    if (spec.kind == "wrong_epsilon") {
      Node wrong = node;
      wrong.attrs["epsilon"] = 0.1f;
      KernelSelection k = backend.select(KernelRequest{wrong, r.inputs, r.constants, r.outputs});
      return k ? std::move(k.kernel) : std::move(chosen);
    }
    return std::make_unique<FaultyKernel>(spec.kind, std::move(chosen));
  };
}

}  // namespace fusor
