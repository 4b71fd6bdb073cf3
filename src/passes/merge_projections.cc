// Projections that share their input (attention's query, key and value) become one GEMM against
// the concatenated weight [K, N1 + N2 + ..]: one pass over A instead of several, and one larger
// GEMM. Each member is a MatMul with a float32 constant [K, Ni] weight, optionally followed by its
// bias Add (a constant [Ni] or [1, .., Ni], the MatMul's only consumer). The merged node is a
// FusedMatMul with one output per member, in node order; attributes `projections` (count),
// `splits` (each Ni) and `biases` (1 where the member has a bias); leading inputs are A, every
// weight, then the biases present, all in member order.
#include <algorithm>

#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "merge_projections";

struct Member {
  int matmul = -1, add = -1, bias = -1;
  int64_t n = 0;
  int last() const { return add >= 0 ? add : matmul; }
};

// The member rooted at MatMul `mm`, or the reason it cannot join.
std::variant<Member, std::string> member_at(const FusionContext& ctx, int mm) {
  const Node& n = ctx.node(mm);
  const int w = n.inputs[1];
  const TensorType& wt = ctx.type(w);
  if (ctx.type(n.inputs[0]).dtype != DType::Float32 || wt.dtype != DType::Float32)
    return std::string("operands are not float32");
  if (!ctx.constant(w)) return std::string("the weight is not a plan-time constant");
  if (wt.dims.size() != 2) return "the weight has shape " + dims_to_string(wt.dims) + ", not [K, N]";
  if (ctx.type(n.inputs[0]).dims.size() < 2) return std::string("A is a vector");
  Member m;
  m.matmul = mm;
  m.n = wt.dims[1];
  const int out = n.outputs[0];
  int add = match::only_consumer(ctx, out, Op::Add);
  if (add < 0) return m;
  int other = match::other_input(ctx.node(add), out);
  const TensorType& bt = ctx.type(other);
  const Dims& od = ctx.type(out).dims;
  bool row = !bt.dims.empty() && bt.dims.size() <= od.size() && bt.dims.back() == m.n &&
             std::all_of(bt.dims.begin(), bt.dims.end() - 1, [](int64_t d) { return d == 1; });
  if (other >= 0 && ctx.constant(other) && bt.dtype == DType::Float32 && row) {
    m.add = add;
    m.bias = other;
  }
  return m;
}

}  // namespace

void merge_projections(FusionContext& ctx) {
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    const Node& first = ctx.node(i);
    if (first.op != Op::MatMul || first.inputs.size() != 2) continue;
    const int a = first.inputs[0];
    std::vector<int> mms;
    for (int u : ctx.consumers(a))
      if (ctx.node(u).op == Op::MatMul && ctx.node(u).inputs[0] == a && ctx.node(u).inputs[1] != a) mms.push_back(u);
    std::sort(mms.begin(), mms.end());
    if (mms.size() < 2 || mms[0] != i) continue;  // each group once, from its first MatMul

    std::vector<Member> members;
    int64_t k = -1;
    for (int mm : mms) {
      auto r = member_at(ctx, mm);
      if (auto* why = std::get_if<std::string>(&r)) {
        ctx.decline(kPass, {mm}, *why);
        continue;
      }
      Member m = std::get<Member>(r);
      const int64_t mk = ctx.type(ctx.node(mm).inputs[1]).dims[0];
      if (k >= 0 && mk != k) {
        ctx.decline(kPass, {mm}, "its K " + std::to_string(mk) + " differs from the group's " + std::to_string(k));
        continue;
      }
      bool shared = false;  // each weight and bias must be its own input of the merged node
      for (const Member& o : members)
        shared = shared || ctx.node(o.matmul).inputs[1] == ctx.node(mm).inputs[1] || (m.bias >= 0 && o.bias == m.bias);
      if (shared) {
        ctx.decline(kPass, {mm}, "it shares its weight or bias with another projection");
        continue;
      }
      k = mk;
      members.push_back(m);
    }
    if (members.size() < 2) continue;
    // Outputs of a fused node come in node order: order the members the same way.
    std::sort(members.begin(), members.end(), [](const Member& x, const Member& y) { return x.last() < y.last(); });
    std::vector<int> nodes, matmuls, leading = {a};
    std::vector<int64_t> splits, biases;
    for (const Member& m : members) {
      nodes.push_back(m.matmul);
      matmuls.push_back(m.matmul);
      if (m.add >= 0) nodes.push_back(m.add);
      leading.push_back(ctx.node(m.matmul).inputs[1]);
      splits.push_back(m.n);
      biases.push_back(m.add >= 0);
    }
    for (const Member& m : members)
      if (m.bias >= 0) leading.push_back(m.bias);
    std::map<std::string, Attribute> attrs = {{"projections", static_cast<int64_t>(members.size())},
                                              {"splits", splits},
                                              {"biases", biases}};
    const std::string suffix = members.size() == 3 ? "qkv" : "projections";
    LegalityRules rules;
    rules.allow_extra_outputs = true;  // every member's result leaves the merged node
    if (ctx.fuse(kPass, nodes, FusedKind::FusedMatMul, suffix, std::move(attrs), rules, leading, matmuls)) i = -1;
  }
}

}  // namespace fusor::passes
