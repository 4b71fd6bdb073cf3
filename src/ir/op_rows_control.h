// Op rows of one family: Control flow: nodes that run subgraphs (Node::subgraphs).
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_CONTROL(X) \
  X(If, Opaque) \
  X(Loop, Opaque) \
  X(Scan, Opaque) \
  /* every row ends in a backslash */
