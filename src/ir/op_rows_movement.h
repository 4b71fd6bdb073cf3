// Op rows of one family: Data movement: padding, tiling, resizing, gathers and scatters.
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_MOVEMENT(X) \
  X(Pad, Injective) \
  X(Tile, Injective) \
  X(Resize, Opaque) \
  X(Upsample, Opaque) \
  X(DepthToSpace, Injective) \
  X(SpaceToDepth, Injective) \
  X(GatherElements, Injective) \
  X(GatherND, Injective) \
  X(ScatterElements, Opaque) \
  X(ScatterND, Opaque) \
  X(Scatter, Opaque) \
  X(ReverseSequence, Injective) \
  X(EyeLike, Opaque) \
  X(CenterCropPad, Injective) \
  /* every row ends in a backslash */
