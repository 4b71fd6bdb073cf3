// The Elementwise fused kernel: runs the body's register program (fused_elementwise_program.h)
// over tiles of the output that stay in L1.
//
// Why the layout: like binary.cc, we drop size-1 output dims and merge adjacent dims along which
// every input is either present or broadcast alike; the innermost merged dim is the "run".
// When the run is long (a bias row over [M,N], a per-row value [M,1], or no broadcast at all)
// tiles are chunks of one row: each float input is then a pointer into its own memory, either
// contiguous or a scalar for the whole tile, so nothing is copied. Short runs (a mask [B,1,1,S]
// over [B,H,S,S] at S = 7) use flat tiles instead: inputs of the full shape or with one element
// are still read in place, the others are gathered into a tile buffer. Non-float inputs (bool,
// int) are always converted into a tile buffer. Outputs are written in place, or streamed past
// the caches when they are too large to be read again from them; a quantized (uint8/int8)
// output is computed in a tile buffer and converted on the way out.
#include <hwy/cache_control.h>

#include <array>
#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/fused_elementwise_program.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

constexpr int64_t kScratchFloats = 4096;    // 16 KiB of tile buffers per thread: L1 with room
constexpr int64_t kMinRun = 64;             // row tiles when the run is at least this long
constexpr size_t kStreamBytes = 16u << 20;  // outputs this large bypass the caches
constexpr int kMaxSlots = 256;

struct Layout {
  std::vector<int64_t> dims;                  // merged iteration dims, outermost first
  std::vector<std::vector<int64_t>> strides;  // per input, per merged dim (0: broadcast)
  int64_t total = 1;
  int64_t inner() const { return dims.back(); }
};

// Merged dims of `out` with each input's strides, or nullopt when an input does not broadcast.
std::optional<Layout> plan_layout(std::span<const TensorType> ins, const Dims& out) {
  const size_t r = out.size();
  std::vector<Dims> aligned;
  for (const TensorType& t : ins) {
    if (t.dims.size() > r) return std::nullopt;
    Dims a(r, 1);
    std::copy(t.dims.begin(), t.dims.end(), a.begin() + static_cast<long>(r - t.dims.size()));
    for (size_t i = 0; i < r; ++i)
      if (a[i] != 1 && a[i] != out[i]) return std::nullopt;
    aligned.push_back(std::move(a));
  }
  Layout l;
  std::vector<std::vector<bool>> present(ins.size());
  std::vector<bool> last;
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    std::vector<bool> here;
    for (const Dims& a : aligned) here.push_back(a[i] != 1);
    if (!l.dims.empty() && here == last) {
      l.dims.back() *= out[i];
      continue;
    }
    l.dims.push_back(out[i]);
    for (size_t k = 0; k < ins.size(); ++k) present[k].push_back(here[k]);
    last = here;
  }
  if (l.dims.empty()) {  // one element
    l.dims = {1};
    for (auto& p : present) p = {false};
  }
  for (int64_t d : l.dims) l.total *= d;
  for (size_t k = 0; k < ins.size(); ++k) {
    std::vector<int64_t> s(l.dims.size(), 0);
    int64_t stride = 1;
    for (size_t j = l.dims.size(); j-- > 0;)
      if (present[k][j]) {
        s[j] = stride;
        stride *= l.dims[j];
      }
    l.strides.push_back(std::move(s));
  }
  return l;
}

// Converts n elements of one input, starting at iteration index `idx`, into dst (or the one
// element there when `scalar`).
using GatherFn = void (*)(const void* base, const Layout& l, const std::vector<int64_t>& stride,
                          const int64_t* idx, int64_t n, float* dst, bool scalar);

template <class T>
void gather(const void* base_v, const Layout& l, const std::vector<int64_t>& stride, const int64_t* idx0, int64_t n,
            float* dst, bool scalar) {
  const T* base = static_cast<const T*>(base_v);
  const size_t nd = l.dims.size();
  std::array<int64_t, 16> idx{};
  std::copy(idx0, idx0 + nd, idx.begin());
  auto offset = [&] {
    int64_t o = 0;
    for (size_t j = 0; j < nd; ++j) o += idx[j] * stride[j];
    return o;
  };
  if (scalar) {
    dst[0] = static_cast<float>(base[offset()]);
    return;
  }
  const int64_t inner = l.dims.back(), step = stride.back();
  for (int64_t pos = 0; pos < n;) {
    const int64_t seg = std::min(n - pos, inner - idx[nd - 1]);
    const T* src = base + offset();
    if (step == 0) std::fill(dst + pos, dst + pos + seg, static_cast<float>(src[0]));
    else if constexpr (std::is_same_v<T, float>) std::memcpy(dst + pos, src, static_cast<size_t>(seg) * sizeof(float));
    else for (int64_t i = 0; i < seg; ++i) dst[pos + i] = static_cast<float>(src[i]);
    pos += seg;
    idx[nd - 1] += seg;
    for (size_t j = nd - 1; j > 0 && idx[j] == l.dims[j]; --j) {  // odometer carry
      idx[j] = 0;
      ++idx[j - 1];
    }
  }
}

GatherFn gather_for(DType t) {
  switch (t) {
    case DType::Float32: return gather<float>;
    case DType::Bool: return gather<bool>;
    case DType::Int32: return gather<int32_t>;
    case DType::Int64: return gather<int64_t>;
    case DType::UInt8: return gather<uint8_t>;
    case DType::Int8: return gather<int8_t>;
    default: return nullptr;
  }
}

// How a slot gets its pointer for a tile.
enum class SlotKind : uint8_t { Direct, Gathered, Temp, Output };

class FusedElementwiseKernel final : public FollowsDenseLayout {
 public:
  FusedElementwiseKernel(ew::Program prog, Layout layout, std::span<const TensorType> in_types, Dims out_dims,
                         size_t out_bytes, std::string name)
      : prog_(std::move(prog)),
        in_types_(in_types.begin(), in_types.end()),
        out_dims_(std::move(out_dims)),
        name_(std::move(name)) {
    stream_ = out_bytes >= kStreamBytes;
    setup(std::move(layout), in_types_);
  }

  bool viable() const {
    const int64_t L = static_cast<int64_t>(simd::lanes());
    return prog_.slots <= kMaxSlots && tile_ >= 8 * L && chunk_ <= tile_ &&
           std::all_of(fns_.begin(), fns_.end(), [](ew::Fn f) { return f != nullptr; });
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    // Work counts every instruction on every element: a short chain on a few tens of thousands of
    // elements (MobileNetV3's squeeze-and-excitation scale, HardSigmoid then a broadcast Mul on
    // [576, 7, 7]) pays for a second thread, where a copy of as many would not.
    if (l_.total == 0) return;  // an empty output: its index arithmetic would divide by a zero dim
    const int64_t work = l_.total * static_cast<int64_t>(prog_.code.size() + 1);
    parallel_range(tiles_, work, 1, [&](int64_t tb, int64_t te) { run_tiles(in, out, tb, te); });
  }
  std::string name() const override { return name_; }

  // In a dense layout the kernel runs on the dims in storage order: the inputs of the output's
  // shape arrive in it, the others must read alike (a per-channel scale under channels-last).
  bool follows_layout(const std::string& layout) const override {
    auto order = dense_layout_order(layout);
    if (!order || order->size() != out_dims_.size()) return false;
    for (const TensorType& t : in_types_)
      if (t.dims != out_dims_ && !reads_alike(t.dims, *order)) return false;
    FusedElementwiseKernel trial = *this;
    return trial.reorder(*order) && trial.viable();
  }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    if (!output_blocked) return;
    for (const std::string& l : inputs)
      if (!l.empty()) {
        reorder(*dense_layout_order(l));
        return;
      }
  }

 private:
  // Lays the tiles over the output (and every input) taken in `order`; false when the inputs
  // do not broadcast in that order.
  bool reorder(const std::vector<int>& order) {
    std::vector<TensorType> types = in_types_;
    for (TensorType& t : types) t.dims = dims_in_order(t.dims, order);
    auto layout = plan_layout(types, dims_in_order(out_dims_, order));
    if (!layout) return false;
    order_ = order;
    setup(std::move(*layout), types);
    return true;
  }

  void setup(Layout layout, std::span<const TensorType> in_types) {
    l_ = std::move(layout);
    row_tiles_ = l_.inner() >= kMinRun || l_.total == l_.inner();
    fns_.clear();
    int buffers = place_slots(in_types);
    buffers_ = buffers + allocate_temporaries(buffers);
    choose_tiles();
  }

  // Where each input and output slot's tile comes from; returns the tile buffers they take.
  int place_slots(std::span<const TensorType> in_types) {
    const size_t ns = static_cast<size_t>(prog_.slots);
    kind_.assign(ns, SlotKind::Temp);
    scalar_.assign(ns, false);
    index_.assign(ns, -1);
    buffer_.assign(ns, -1);
    int buffers = 0;
    gather_.assign(prog_.input_slot.size(), nullptr);
    for (size_t k = 0; k < prog_.input_slot.size(); ++k) {
      const int s = prog_.input_slot[k];
      if (s < 0) continue;
      const auto& st = l_.strides[k];
      bool all_zero = std::all_of(st.begin(), st.end(), [](int64_t x) { return x == 0; });
      bool full = numel_of(in_types[k].dims) == l_.total;
      bool scalar = row_tiles_ ? st.back() == 0 : all_zero;
      bool direct = prog_.input_dtype[k] == DType::Float32 && (row_tiles_ || scalar || full);
      kind_[static_cast<size_t>(s)] = direct ? SlotKind::Direct : SlotKind::Gathered;
      scalar_[static_cast<size_t>(s)] = scalar;
      index_[static_cast<size_t>(s)] = static_cast<int>(k);
      if (!direct) buffer_[static_cast<size_t>(s)] = buffers++;
      gather_[k] = gather_for(prog_.input_dtype[k]);
    }
    for (size_t o = 0; o < prog_.output_slot.size(); ++o) {
      const size_t s = static_cast<size_t>(prog_.output_slot[o]);
      kind_[s] = SlotKind::Output;
      index_[s] = static_cast<int>(o);
      if (stream_ || converted(o)) buffer_[s] = buffers++;
    }
    return buffers;
  }

  // Temporaries take buffers after the first `base`, each reused once its value's last reader
  // ran; also binds each instruction to the variant for its scalar operands. Returns how many.
  int allocate_temporaries(int base) {
    const size_t ns = static_cast<size_t>(prog_.slots);
    std::vector<int> last_use(ns, -1);
    for (size_t i = 0; i < prog_.code.size(); ++i)
      for (int j = 0; j < prog_.code[i].nsrc; ++j) last_use[static_cast<size_t>(prog_.code[i].src[j])] = static_cast<int>(i);
    std::vector<int> free_list;
    int temps_made = 0;
    for (size_t i = 0; i < prog_.code.size(); ++i) {
      ew::Instr& ins = prog_.code[i];
      bool sc[3] = {false, false, false};
      bool all_scalar = true;
      for (int j = 0; j < ins.nsrc; ++j) {
        const size_t s = static_cast<size_t>(ins.src[j]);
        sc[j] = scalar_[s];
        all_scalar = all_scalar && sc[j];
        if (kind_[s] == SlotKind::Temp && last_use[s] == static_cast<int>(i) &&
            std::find(free_list.begin(), free_list.end(), buffer_[s]) == free_list.end())
          free_list.push_back(buffer_[s]);  // in place is safe: every op reads element i before writing it
      }
      fns_.push_back(ew::select_fn(ins, sc));
      const size_t d = static_cast<size_t>(ins.dst);
      scalar_[d] = all_scalar;
      if (kind_[d] == SlotKind::Temp) {
        if (free_list.empty()) {
          buffer_[d] = base + temps_made++;
        } else {
          buffer_[d] = free_list.back();
          free_list.pop_back();
        }
        if (last_use[d] < 0) free_list.push_back(buffer_[d]);  // never read (dead value)
      }
    }
    return temps_made;
  }

  // The tile: as many vectors as fit kScratchFloats across all buffers, 8 to 64 of them.
  void choose_tiles() {
    if (l_.total == 0) return;  // nothing to tile (and no row to divide by); run() does nothing
    const int64_t L = static_cast<int64_t>(simd::lanes());
    const int64_t inner = l_.inner(), rows = l_.total / inner;
    tile_ = buffers_ ? kScratchFloats / buffers_ / L * L : 64 * L;
    tile_ = std::min(tile_, 64 * L);
    if (tile_ < 8 * L) return;  // too many live values for L1: not viable()
    if (row_tiles_) {
      tiles_per_row_ = (inner + tile_ - 1) / tile_;
      chunk_ = ((inner + tiles_per_row_ - 1) / tiles_per_row_ + L - 1) / L * L;
      tiles_ = rows * tiles_per_row_;
    } else {
      chunk_ = tile_;
      tiles_ = (l_.total + tile_ - 1) / tile_;
    }
  }

  void run_tiles(std::span<const Tensor> in, std::span<Tensor> out, int64_t tb, int64_t te) const {
    alignas(64) float scratch[kScratchFloats];
    std::array<float*, kMaxSlots> ptr{};
    std::array<int64_t, 16> idx{};
    const size_t nd = l_.dims.size();
    const int64_t inner = l_.inner();
    for (int64_t t = tb; t < te; ++t) {
      int64_t s, n;
      if (row_tiles_) {
        const int64_t row = t / tiles_per_row_, c0 = (t % tiles_per_row_) * chunk_;
        s = row * inner + c0;
        n = std::min(chunk_, inner - c0);
      } else {
        s = t * tile_;
        n = std::min(tile_, l_.total - s);
      }
      for (size_t j = nd, rem = static_cast<size_t>(s); j-- > 0;) {
        idx[j] = static_cast<int64_t>(rem % static_cast<size_t>(l_.dims[j]));
        rem /= static_cast<size_t>(l_.dims[j]);
      }
      for (size_t sl = 0; sl < static_cast<size_t>(prog_.slots); ++sl) {
        const int k = index_[sl];
        switch (kind_[sl]) {
          case SlotKind::Direct: {
            const auto& st = l_.strides[static_cast<size_t>(k)];
            int64_t off = 0;
            for (size_t j = 0; j < nd; ++j) off += idx[j] * st[j];
            ptr[sl] = const_cast<float*>(in[static_cast<size_t>(k)].data<float>()) + off;
            break;
          }
          case SlotKind::Gathered:
            ptr[sl] = scratch + buffer_[sl] * tile_;
            gather_[static_cast<size_t>(k)](in[static_cast<size_t>(k)].raw(), l_, l_.strides[static_cast<size_t>(k)],
                                            idx.data(), n, ptr[sl], scalar_[sl]);
            break;
          case SlotKind::Temp: ptr[sl] = scratch + buffer_[sl] * tile_; break;
          case SlotKind::Output:
            ptr[sl] = buffer_[sl] >= 0 ? scratch + buffer_[sl] * tile_ : out[static_cast<size_t>(k)].data<float>() + s;
            break;
        }
      }
      for (size_t i = 0; i < prog_.code.size(); ++i) {
        const ew::Instr& ins = prog_.code[i];
        const float* src[3] = {ptr[static_cast<size_t>(ins.src[0] < 0 ? 0 : ins.src[0])],
                               ins.nsrc > 1 ? ptr[static_cast<size_t>(ins.src[1])] : nullptr,
                               ins.nsrc > 2 ? ptr[static_cast<size_t>(ins.src[2])] : nullptr};
        const size_t d = static_cast<size_t>(ins.dst);
        fns_[i](src, ptr[d], scalar_[d] ? 1 : n, ins.p);
      }
      for (size_t o = 0; o < prog_.output_slot.size(); ++o) {
        const size_t sl = static_cast<size_t>(prog_.output_slot[o]);
        if (converted(o)) {
          store_quantized(ptr[sl], scalar_[sl], out[o], s, n);
          continue;
        }
        float* y = out[o].data<float>() + s;
        if (scalar_[sl]) std::fill(y, y + n, ptr[sl][0]);  // every input broadcast (one element)
        else if (stream_) store_stream(ptr[sl], y, n);
      }
    }
    if (stream_) hwy::FlushStream();
  }

  // Output o is not float32: a QuantizeLinear's integer-valued floats, stored as uint8/int8.
  bool converted(size_t o) const { return prog_.output_dtype[o] != DType::Float32; }

  static void store_quantized(const float* x, bool scalar, const Tensor& y, int64_t at, int64_t n) {
    auto store = [&](auto* q) {
      for (int64_t i = 0; i < n; ++i) q[at + i] = static_cast<std::remove_pointer_t<decltype(q)>>(x[scalar ? 0 : i]);
    };
    if (y.dtype() == DType::Int8) store(y.data<int8_t>());
    else store(y.data<uint8_t>());
  }

  static void store_stream(const float* x, float* y, int64_t n) {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = 0;
    if (reinterpret_cast<uintptr_t>(y) % (static_cast<uintptr_t>(L) * sizeof(float)) == 0)
      for (; i + L <= n; i += L) hn::Stream(hn::Load(d, x + i), d, y + i);
    std::memcpy(y + i, x + i, static_cast<size_t>(n - i) * sizeof(float));
  }

  ew::Program prog_;
  std::vector<TensorType> in_types_;  // as bound, row-major
  Dims out_dims_;
  Layout l_;
  std::string name_;
  std::vector<ew::Fn> fns_;       // per instruction
  std::vector<SlotKind> kind_;    // per slot
  std::vector<bool> scalar_;      // per slot: one value for the whole tile
  std::vector<int> index_;        // per slot: input or output index
  std::vector<int> buffer_;       // per slot: tile buffer, or -1
  std::vector<GatherFn> gather_;  // per input
  bool row_tiles_ = true, stream_ = false;
  int buffers_ = 0;
  int64_t tile_ = 0, chunk_ = 0, tiles_per_row_ = 1, tiles_ = 0;
};

}  // namespace

KernelSelection make_fused_elementwise_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (!n.body) return KernelSelection::declined("the node has no body");
  if (r.outputs.empty() || used_outputs(r) != r.outputs.size()) return KernelSelection::declined("an output is omitted");
  const Dims& dims = r.outputs[0].dims;
  size_t out_bytes = 0;
  bool quantized = false;
  for (const TensorType& o : r.outputs) {
    const bool q8 = o.dtype == DType::UInt8 || o.dtype == DType::Int8;
    if ((o.dtype != DType::Float32 && !q8) || o.dims != dims)  // every output is the full iteration shape
      return KernelSelection::declined("outputs are not all float32 (or quantized) of one shape");
    out_bytes += nbytes_of(o.dims, o.dtype);
  }
  for (const TensorType& t : r.inputs) quantized = quantized || t.dtype == DType::UInt8 || t.dtype == DType::Int8;
  for (const TensorType& o : r.outputs) quantized = quantized || o.dtype != DType::Float32;
  if (dims.size() > 16) return KernelSelection::declined("rank " + std::to_string(dims.size()) + " is above 16");
  auto compiled = ew::compile_program(n, r.inputs, r.constants);
  auto* prog = std::get_if<ew::Program>(&compiled);
  if (!prog) return KernelSelection::declined(std::get<std::string>(compiled));
  auto layout = plan_layout(r.inputs, dims);
  if (!layout) return KernelSelection::declined("an input does not broadcast to the output shape " + dims_to_string(dims));
  if (layout->total == 0) return KernelSelection::declined("the output is empty");
  bool broadcast = false;
  for (size_t k = 0; k < r.inputs.size(); ++k)
    broadcast = broadcast || (prog->input_slot[k] >= 0 && numel_of(r.inputs[k].dims) != layout->total &&
                              numel_of(r.inputs[k].dims) != 1);  // scalars are no broadcast pattern
  const size_t ops = n.body->nodes.size();
  std::string name = std::string(quantized ? "elementwise_q8_" : "elementwise_f32_") + std::to_string(ops) + "ops" +
                     (broadcast ? "_bcast_" : "_") + kIsa;
  auto k = std::make_unique<FusedElementwiseKernel>(std::move(*prog), std::move(*layout), r.inputs, dims, out_bytes,
                                                    std::move(name));
  if (!k->viable())
    return KernelSelection::declined("its program has more live values than L1-sized tiles hold, or operands no variant reads");
  return k;
}

}  // namespace fusor::cpu
