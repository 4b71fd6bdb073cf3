#include "passes/logit_rows.h"

#include "ir/op_table.h"

namespace fusor {

bool gather_logit_rows(Graph& g, const std::string& logits, const std::string& rows_input) {
  const int out = g.find_value(logits);
  if (out < 0 || g.find_value(rows_input) >= 0) return false;
  auto producer_of = [&](int value) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int o : g.nodes[i].outputs)
        if (o == value) return static_cast<int>(i);
    return -1;
  };
  // Exports often end in a Cast (to float, of float) after the head: elementwise, so row-wise.
  int producer = producer_of(out);
  while (producer >= 0 && (g.nodes[static_cast<size_t>(producer)].op == Op::Cast ||
                           g.nodes[static_cast<size_t>(producer)].op == Op::Identity))
    producer = producer_of(g.nodes[static_cast<size_t>(producer)].inputs[0]);
  if (producer < 0 || g.nodes[static_cast<size_t>(producer)].op != Op::MatMul) return false;
  const Node& head = g.nodes[static_cast<size_t>(producer)];
  const Value& b = g.values[static_cast<size_t>(head.inputs[1])];
  // A MatMul by a matrix keeps its left operand's rank: logits of rank 3 mean a [batch, tokens,
  // hidden] operand (intermediate shapes are not known before binding).
  const std::optional<Shape> shape = g.values[static_cast<size_t>(out)].shape;
  if (!shape || shape->size() != 3 || !b.constant || b.constant->dims().size() != 2) return false;
  // Copied: adding values below moves them.
  const DType dtype = g.values[static_cast<size_t>(head.inputs[0])].dtype;
  const int64_t hidden = b.constant->dims()[0];

  Value rows;
  rows.name = rows_input;
  rows.dtype = DType::Int64;
  rows.shape = Shape{Dim{-1, "logit_rows"}};
  const int rows_id = g.add_value(std::move(rows));
  g.inputs.push_back(rows_id);
  Value gathered;
  gathered.name = rows_input + ".hidden";
  gathered.dtype = dtype;
  gathered.shape = Shape{(*shape)[0], Dim{-1, "logit_rows"}, Dim{hidden, ""}};
  const int gathered_id = g.add_value(std::move(gathered));
  (*g.values[static_cast<size_t>(out)].shape)[1] = Dim{-1, "logit_rows"};

  Node gather;
  gather.name = rows_input + "/gather";
  gather.op = Op::Gather;
  gather.op_type = op_info(Op::Gather).name;
  gather.opset = static_cast<int>(g.opset);
  gather.inputs = {g.nodes[static_cast<size_t>(producer)].inputs[0], rows_id};
  gather.outputs = {gathered_id};
  gather.attrs = {{"axis", int64_t{1}}};
  g.nodes[static_cast<size_t>(producer)].inputs[0] = gathered_id;
  g.nodes.push_back(std::move(gather));
  g.reorder_nodes();
  return true;
}

}  // namespace fusor
