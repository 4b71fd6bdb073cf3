// Pad and CenterCropPad parameters resolved against a concrete input shape. Shared by the shape
// functions (plan-time constants) and the reference kernels (the same values as tensors), so
// both agree on the output shape. Both ops are "place the input at an offset in a new shape":
// a positive offset pads, a negative one crops.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace fusor {

// How Pad fills the border: a constant, or the input read with edge clamping, mirroring about
// the edge (numpy's "reflect": the edge element is not repeated) or wrapping around.
enum class PadMode { Constant, Reflect, Edge, Wrap };

struct PadSpec {
  PadMode mode = PadMode::Constant;
  std::vector<int64_t> begin;  // per input axis: elements added before the input (negative: cut)
  Dims out_dims;
};

// The node's `mode` attribute; throws naming `node` on an unknown mode.
PadMode pad_mode(const Node& node);

// ONNX Pad: `pads` holds every begin, then every end, for `axes` (empty: all axes in order).
// Negative pads crop. Throws naming `node` on a wrong pads length, a repeated or out-of-range
// axis, a negative output dim, or reflect/edge/wrap padding of an empty axis.
PadSpec resolve_pad(const Node& node, const Dims& in, const std::vector<int64_t>& pads,
                    std::vector<int64_t> axes);

// ONNX CenterCropPad: each named axis (empty: all) becomes `shape[i]` long, centred: cropped
// when shorter (the extra element of an odd difference cut at the end), zero-padded when longer.
PadSpec resolve_center_crop_pad(const Node& node, const Dims& in, const std::vector<int64_t>& shape,
                                std::vector<int64_t> axes);

}  // namespace fusor
