#include "ir/einsum_equation.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "ir/shape_util.h"

namespace fusor {
namespace {

// One side of an equation term: labels in order, with kEllipsis marking where "..." stands.
constexpr int kEllipsis = -1;
using Term = std::vector<int>;

Term parse_term(const Node& node, const std::string& text) {
  Term term;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      term.push_back(static_cast<unsigned char>(c));
    } else if (c == '.' && text.compare(i, 3, "...") == 0 && !seen_ellipsis) {
      seen_ellipsis = true;
      term.push_back(kEllipsis);
      i += 2;
    } else {
      fail(node, "equation term '" + text + "' has an unexpected '" + std::string(1, c) +
                     "' (letters and at most one '...' are allowed)", ErrorKind::InvalidModel);
    }
  }
  return term;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

}  // namespace

EinsumAxes einsum_axes(const Node& node, const std::string& equation, const std::vector<Dims>& operands) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  size_t arrow = eq.find("->");
  bool explicit_output = arrow != std::string::npos;
  std::string lhs = explicit_output ? eq.substr(0, arrow) : eq;
  std::vector<std::string> texts = split(lhs, ',');
  if (texts.size() != operands.size())
    fail(node, "equation '" + equation + "' has " + std::to_string(texts.size()) + " operand terms but the node has " +
                   std::to_string(operands.size()) + " inputs", ErrorKind::InvalidModel);

  // Sizes of labels and of the broadcast ellipsis dims (right-aligned across operands).
  std::array<int64_t, 256> label_size;
  label_size.fill(-1);
  std::array<int, 256> label_count{};
  std::vector<Term> terms;
  Dims ellipsis;
  bool any_ellipsis = false;
  for (size_t k = 0; k < operands.size(); ++k) {
    Term term = parse_term(node, texts[k]);
    const Dims& dims = operands[k];
    int64_t letters = static_cast<int64_t>(std::count_if(term.begin(), term.end(), [](int l) { return l != kEllipsis; }));
    bool has_ellipsis = letters != static_cast<int64_t>(term.size());
    int64_t rank = static_cast<int64_t>(dims.size());
    if (has_ellipsis ? rank < letters : rank != letters)
      fail(node, "term '" + texts[k] + "' does not fit input " + std::to_string(k) + " of shape " + dims_to_string(dims),
           ErrorKind::InvalidModel);
    size_t ell_rank = static_cast<size_t>(rank - letters);
    size_t d = 0;
    for (int l : term) {
      if (l == kEllipsis) {
        any_ellipsis = true;
        Dims mine(dims.begin() + static_cast<long>(d), dims.begin() + static_cast<long>(d + ell_rank));
        ellipsis = broadcast_dims(ellipsis, mine, node);
        d += ell_rank;
        continue;
      }
      int64_t size = dims[d++];
      int64_t& known = label_size[static_cast<size_t>(l)];
      if (known >= 0 && known != size)
        fail(node, "label '" + std::string(1, static_cast<char>(l)) + "' has size " + std::to_string(known) +
                       " and " + std::to_string(size), ErrorKind::InvalidModel);
      known = size;
      ++label_count[static_cast<size_t>(l)];
    }
    terms.push_back(std::move(term));
  }

  // The output term: given, or (implicit) the ellipsis then the labels seen once, sorted.
  Term out;
  if (explicit_output) {
    out = parse_term(node, eq.substr(arrow + 2));
    std::array<bool, 256> used{};
    for (int l : out) {
      if (l == kEllipsis) continue;
      if (label_size[static_cast<size_t>(l)] < 0)
        fail(node, "output label '" + std::string(1, static_cast<char>(l)) + "' is in no input", ErrorKind::InvalidModel);
      if (used[static_cast<size_t>(l)])
        fail(node, "output label '" + std::string(1, static_cast<char>(l)) + "' is repeated", ErrorKind::InvalidModel);
      used[static_cast<size_t>(l)] = true;
    }
  } else {
    if (any_ellipsis) out.push_back(kEllipsis);
    for (int l = 0; l < 256; ++l)
      if (label_count[static_cast<size_t>(l)] == 1) out.push_back(l);
  }

  // Axes: output labels and ellipsis dims in output order, then the summed ones.
  EinsumAxes ax;
  std::array<int, 256> label_axis;
  label_axis.fill(-1);
  std::vector<int> ellipsis_axis(ellipsis.size(), -1);
  auto add_ellipsis_axes = [&] {
    for (size_t e = 0; e < ellipsis.size(); ++e) {
      if (ellipsis_axis[e] >= 0) continue;
      ellipsis_axis[e] = static_cast<int>(ax.sizes.size());
      ax.sizes.push_back(ellipsis[e]);
    }
  };
  for (int l : out) {
    if (l == kEllipsis) {
      add_ellipsis_axes();
      continue;
    }
    label_axis[static_cast<size_t>(l)] = static_cast<int>(ax.sizes.size());
    ax.sizes.push_back(label_size[static_cast<size_t>(l)]);
  }
  ax.output_rank = ax.sizes.size();
  for (const Term& term : terms)
    for (int l : term)
      if (l != kEllipsis && label_axis[static_cast<size_t>(l)] < 0) {
        label_axis[static_cast<size_t>(l)] = static_cast<int>(ax.sizes.size());
        ax.sizes.push_back(label_size[static_cast<size_t>(l)]);
      }
  add_ellipsis_axes();  // an ellipsis missing from an explicit output is summed

  for (size_t k = 0; k < operands.size(); ++k) {
    const Dims& dims = operands[k];
    std::vector<int64_t> in_strides = strides_of(dims);
    std::vector<int64_t> s(ax.sizes.size(), 0);
    size_t ell_rank = dims.size() - static_cast<size_t>(std::count_if(terms[k].begin(), terms[k].end(),
                                                                       [](int l) { return l != kEllipsis; }));
    size_t d = 0;
    for (int l : terms[k]) {
      if (l == kEllipsis) {
        for (size_t j = 0; j < ell_rank; ++j, ++d) {
          size_t e = ellipsis.size() - ell_rank + j;  // right-aligned
          if (dims[d] != 1 || ellipsis[e] == 1) s[static_cast<size_t>(ellipsis_axis[e])] += in_strides[d];
        }
        continue;
      }
      s[static_cast<size_t>(label_axis[static_cast<size_t>(l)])] += in_strides[d++];
    }
    ax.strides.push_back(std::move(s));
  }
  return ax;
}

}  // namespace fusor
