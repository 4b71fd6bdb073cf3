// Op rows of one family: Classic ML and text featurization (ai.onnx.ml domain, and TfIdfVectorizer).
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_ML(X) \
  X(TfIdfVectorizer, Opaque) \
  X(Binarizer, Elementwise) \
  X(ArrayFeatureExtractor, Opaque) \
  X(TreeEnsemble, Opaque) \
  /* every row ends in a backslash */
