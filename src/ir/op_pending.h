// Ops that have a row in the op table but no implementation yet (kernels/ref/pending.h marks
// them): the importer and `fusor inspect` treat them as unsupported, like ops with no row.
#pragma once
#include "ir/op_table.h"

namespace fusor {

void mark_op_pending(Op op);  // called during static initialisation by FUSOR_PENDING_OP
bool op_is_pending(Op op);

}  // namespace fusor
