// Padding-free execution of transformer encoders (TensorRT's "remove padding"): requests of
// different lengths run together as one stream of tokens, so GEMMs, LayerNorm and GELU see real
// tokens only, and attention keeps each sequence to its own keys. A packed session is bound to a
// token budget, not to batch x sequence, so one plan serves every mix of lengths that fits.
//
//   auto packed = fusor::packed_session(engine, 512);      // throws if the model cannot pack
//   auto outs = packed.run({request_a, request_b});        // each {input_ids [rows, len], ...}
//
// A request row is one sequence with all of its tokens, its own padding included: the mask
// still applies within it, so each request gets what running it alone would give (within float
// rounding), left- or right-padded. Which models pack, and why others do not: see
// docs/packing.md; the refusal is an UnsupportedOp Error whose message gives the reason.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fusor/engine.h"

namespace fusor {

// Packing's name where the precision gate lists what it rolled back (then fusion.disabled holds
// it, and the server does not pack).
inline constexpr const char* kPackingItem = "packing";

class PackedSession {
 public:
  PackedSession(PackedSession&&) noexcept;
  PackedSession& operator=(PackedSession&&) noexcept;
  ~PackedSession();

  // Tokens one run holds.
  int64_t capacity() const;
  // The model inputs a request gives, each int [rows, length] with the same rows and length.
  const std::vector<std::string>& request_inputs() const;
  // Runs the requests in one packed step; per request, every model output [rows, length, ...].
  // Throws an InvalidArgument Error when a request is malformed or they exceed capacity().
  std::vector<std::map<std::string, Tensor>> run(std::span<const std::map<std::string, Tensor>> requests);
  // Tokens in a request (rows x length); InvalidArgument when it is malformed.
  int64_t tokens_of(const std::map<std::string, Tensor>& request) const;
  // The packed plan's session: its memory, fusion items and step observer.
  Session& session();

 private:
  struct Impl;
  friend PackedSession packed_session(const Engine&, int64_t, const SessionOptions&);
  explicit PackedSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A session that runs up to `tokens` tokens per step, packed. Throws an UnsupportedOp Error
// ("cannot pack tokens: <why>") when the model is not a transformer encoder whose every step but
// attention works token by token, and InvalidArgument when tokens < 1.
PackedSession packed_session(const Engine& engine, int64_t tokens, const SessionOptions& options = {});

}  // namespace fusor
