// The gate's packing item (fusor/check.h): one packed step of mixed-length requests against each
// request run alone, in the fast plan (tier 1) and in reference kernels (tier 3).
#include <algorithm>
#include <string>

#include "check/compare.h"
#include "fusor/check.h"
#include "fusor/packed.h"

namespace fusor {
namespace {

using Feeds = std::map<std::string, Tensor>;

struct Request {
  std::string label;
  Feeds feeds;
};

// Masks (inputs named *mask*) get `pad` zeros on the left or the right of every row.
Request make_request(const Engine& engine, const PackedSession& packed, int64_t rows, int64_t len, int64_t pad,
                     bool left, uint64_t seed) {
  std::map<std::string, Dims> dims;
  for (const std::string& name : packed.request_inputs()) dims[name] = {rows, len};
  Feeds f = engine.sample_inputs(dims, seed);
  for (auto& [name, t] : f) {
    if (name.find("mask") == std::string::npos || pad == 0) continue;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < len; ++j) {
        const bool masked = left ? j < pad : j >= len - pad;
        if (masked) t.dtype() == DType::Int32 ? void(t.data<int32_t>()[r * len + j] = 0) : void(t.data<int64_t>()[r * len + j] = 0);
      }
  }
  std::string label = std::to_string(rows) + "x" + std::to_string(len) + " tokens";
  if (pad) label += std::string(left ? ", left" : ", right") + "-padded " + std::to_string(pad);
  return {label, std::move(f)};
}

// Keeps the worse of two differences (by whether they pass, then by the largest |a - b|).
void keep_worst(Difference& worst, const Difference& d, std::string* where, const std::string& label) {
  const bool first = where && where->empty();
  const bool worse = first || (worst.within && !d.within) || (worst.within == d.within && d.max_abs > worst.max_abs);
  if (!worse) return;
  worst = d;
  if (where) *where = label;
}

}  // namespace

PackingVerdict check_packing(const Engine& engine, const PackingCheckOptions& options) {
  PackingVerdict v;
  SessionOptions fast;
  fast.fusion = options.fusion;
  const int64_t L = std::max<int64_t>(2, options.max_length);
  // The shapes the issue names (1, 2, L - 1, L), both paddings, two rows in one request, and a
  // fully padded-out tail; the capacity holds them all at once.
  struct Shape {
    int64_t rows, len, pad;
    bool left;
  };
  const std::vector<Shape> shapes = {{1, 1, 0, false},     {1, 2, 1, true},          {1, L - 1, L / 4, false},
                                     {1, L, 0, false},     {1, L, L / 3, true},      {2, L / 2 + 1, 1, false},
                                     {1, std::max<int64_t>(1, L / 3), 0, false}};
  int64_t capacity = 0;
  for (const Shape& s : shapes) capacity += s.rows * s.len;
  std::optional<PackedSession> packed;
  try {
    packed.emplace(packed_session(engine, capacity, fast));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::UnsupportedOp) throw;
    v.reason = e.what();
    return v;
  }
  v.packable = true;
  std::vector<Request> requests;
  uint64_t seed = options.seed;
  for (const Shape& s : shapes) requests.push_back(make_request(engine, *packed, s.rows, s.len, s.pad, s.left, ++seed));
  std::vector<Feeds> feeds;
  for (const Request& r : requests) feeds.push_back(r.feeds);
  auto outs = packed->run(feeds);

  const Tolerance tol = twin_tolerance();
  SessionOptions reference;
  reference.reference = true;
  v.passed = true;
  for (size_t i = 0; i < requests.size(); ++i) {
    v.requests.push_back(requests[i].label);
    std::map<std::string, Dims> dims;
    for (const auto& [name, t] : requests[i].feeds) dims[name] = t.dims();
    Feeds alone = engine.session(dims, fast).run(requests[i].feeds);
    Feeds truth = engine.session(dims, reference).run(requests[i].feeds);
    for (const auto& [name, got] : outs[i]) {
      Difference d = compare_tensors(got, alone.at(name), tol), t = compare_tensors(got, truth.at(name), tol);
      keep_worst(v.vs_padded, d, &v.worst_request, requests[i].label + ", output " + name);
      keep_worst(v.vs_truth, t, nullptr, "");
      v.passed = v.passed && d.within && t.within;
    }
  }
  return v;
}

}  // namespace fusor
