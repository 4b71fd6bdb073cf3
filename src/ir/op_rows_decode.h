// Op rows of one family: decoding against a paged KV cache (issue #16), fusor's own ops (ONNX
// domain "fusor"). X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_DECODE(X) \
  X(CachedAttention, Opaque) \
  /* every row ends in a backslash */
