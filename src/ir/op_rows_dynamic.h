// Op rows of one family: Ops whose output shape depends on input values.
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_DYNAMIC(X) \
  X(NonZero, Opaque) \
  X(Unique, Opaque) \
  X(Compress, Opaque) \
  X(NonMaxSuppression, Opaque) \
  /* every row ends in a backslash */
