#include "engine/sample_inputs.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "ir/half.h"

namespace fusor {
namespace {

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

int64_t index_bound(const Graph& g, int value) {
  int64_t bound = -1;
  auto consumers = g.consumers();
  // Follow value-preserving ops so ids that pass through Cast/Unsqueeze still find their table.
  std::vector<int> frontier{value};
  for (size_t i = 0; i < frontier.size() && i < 64; ++i) {
    int v = frontier[i];
    for (int n : consumers[static_cast<size_t>(v)]) {
      const Node& node = g.nodes[static_cast<size_t>(n)];
      if (node.op == Op::Gather && node.inputs.size() > 1 && node.inputs[1] == v) {
        const Value& data = g.values[static_cast<size_t>(node.inputs[0])];
        if (data.constant) {
          int64_t axis = node.attr_int("axis", 0);
          if (axis < 0) axis += static_cast<int64_t>(data.constant->rank());
          int64_t rows = data.constant->dims().at(static_cast<size_t>(axis));
          bound = bound < 0 ? rows : std::min(bound, rows);
        }
      } else if (node.op == Op::Cast || node.op == Op::Unsqueeze || node.op == Op::Reshape ||
                 node.op == Op::Identity || node.op == Op::Squeeze) {
        if (node.inputs[0] == v && node.outputs[0] >= 0) frontier.push_back(node.outputs[0]);
      }
    }
  }
  return bound;
}

std::map<std::string, Tensor> sample_inputs(const Graph& g, const std::map<std::string, Dims>& dims,
                                            uint64_t seed) {
  std::map<std::string, Tensor> out;
  std::mt19937_64 rng(seed);
  // A decoder step's past: how many more columns its [batch, past + tokens] attention mask has
  // than tokens it feeds (not a head mask, nor an encoder's mask).
  int64_t mask_columns = -1;
  for (int id : g.inputs) {
    const Value& v = g.values[static_cast<size_t>(id)];
    auto it = dims.find(v.name);
    const std::string lower = lowercase(v.name);
    if (it != dims.end() && it->second.size() == 2 && lower.find("attention_mask") != std::string::npos &&
        lower.find("encoder") == std::string::npos && v.dtype != DType::Float32)
      mask_columns = it->second.back();
  }
  for (int id : g.inputs) {
    const Value& v = g.values[static_cast<size_t>(id)];
    auto it = dims.find(v.name);
    if (it == dims.end()) throw Error("no shape for input '" + v.name + "'");
    Tensor t(v.dtype, it->second);
    const std::string lower = lowercase(v.name);
    const bool is_positions = lower.find("position_id") != std::string::npos && !it->second.empty();
    const bool is_mask = lower.find("mask") != std::string::npos;
    const bool is_type_ids = lower.find("token_type") != std::string::npos || lower.find("segment") != std::string::npos;
    const int64_t n = t.numel();
    switch (v.dtype) {
      case DType::Float32: case DType::Float64: case DType::Float16: case DType::BFloat16: {
        std::normal_distribution<double> normal(0.0, 1.0);
        auto* bits = static_cast<uint16_t*>(t.raw());
        for (int64_t i = 0; i < n; ++i) {
          double x = is_mask ? 1.0 : normal(rng);
          if (v.dtype == DType::Float32) t.data<float>()[i] = static_cast<float>(x);
          else if (v.dtype == DType::Float64) t.data<double>()[i] = x;
          else bits[i] = v.dtype == DType::Float16 ? float_to_half(x) : float_to_bfloat16(x);
        }
        break;
      }
      case DType::Int64: case DType::Int32: case DType::Int8: case DType::UInt8: case DType::Int16:
      case DType::UInt16: case DType::UInt32: case DType::UInt64: {
        int64_t bound = index_bound(g, id);
        std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(bound, 1) - 1);
        // Positions count up along the last axis after the past, as a decoder step numbers its
        // tokens (within the table they index, if any). All zeros hid a wrong rotary embedding:
        // at position 0 sin is 0 and every rotation is the identity.
        const int64_t tokens = is_positions ? it->second.back() : 1;
        const int64_t past = std::max<int64_t>(0, mask_columns - tokens);
        for (int64_t i = 0; i < n; ++i) {
          int64_t x = is_mask ? 1 : is_positions ? past + i % std::max<int64_t>(tokens, 1)
                                  : (is_type_ids || bound <= 0) ? 0 : pick(rng);
          if (is_positions && bound > 0) x %= bound;
          switch (v.dtype) {
            case DType::Int64: t.data<int64_t>()[i] = x; break;
            case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(x); break;
            case DType::Int8: t.data<int8_t>()[i] = static_cast<int8_t>(x); break;
            case DType::Int16: t.data<int16_t>()[i] = static_cast<int16_t>(x); break;
            case DType::UInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(x); break;
            case DType::UInt32: t.data<uint32_t>()[i] = static_cast<uint32_t>(x); break;
            case DType::UInt64: t.data<uint64_t>()[i] = static_cast<uint64_t>(x); break;
            default: t.data<uint8_t>()[i] = static_cast<uint8_t>(x); break;
          }
        }
        break;
      }
      case DType::Bool:
        for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = true;
        break;
      case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
      case DType::Int4: case DType::UInt4: case DType::Int2: case DType::UInt2: case DType::Float4E2M1:
      case DType::Float8E8M0:  // quantized storage: zeros are valid in every one of them (2^-127 for e8m0)
        if (n) std::memset(t.raw(), 0, static_cast<size_t>(n));
        break;
      case DType::Undefined: break;
    }
    out[v.name] = t;
  }
  return out;
}

}  // namespace fusor
