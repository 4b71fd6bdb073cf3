// Ops of the ml family (ir/op_rows_ml.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(TfIdfVectorizer)
FUSOR_PENDING_OP(Binarizer)
FUSOR_PENDING_OP(ArrayFeatureExtractor)
FUSOR_PENDING_OP(TreeEnsemble)
}  // namespace fusor
