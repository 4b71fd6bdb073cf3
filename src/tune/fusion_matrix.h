// The config matrix: for each batch-size bucket, the fusion option that runs it, chosen from
// alternated rounds of timings (measure_rounds) so that noise cannot move a bucket off "all".
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fusor/tuned_record.h"
#include "tune/service_times.h"

namespace fusor::tune {

// One option against the kept plan over the rounds of one batch size.
struct RoundComparison {
  int64_t rounds = 0;  // rounds both ran
  int64_t wins = 0;    // rounds in which the option ran faster than the kept plan
  double ratio = 1;    // median over rounds of option ms / kept ms (0.9: 10% faster)
  double noise = 0;    // median absolute deviation of those per-round ratios

  // The rule. The option replaces the kept plan only when it was faster in at least three rounds
  // of four (and in three rounds at least), and its median ratio is faster by more than the
  // noise: by more than max(3%, twice the MAD of the per-round ratios).
  bool clear_win() const;
};

// `option` against `kept`, round by round (round i of each ran back to back); rounds only one
// of them ran are ignored.
RoundComparison compare_rounds(const std::vector<double>& kept, const std::vector<double>& option);

struct MatrixChoice {
  std::vector<std::pair<int64_t, const FusionOption*>> per_rows;  // ascending bucket sizes
  std::vector<MatrixTiming> timings;  // every option's time and evidence per size, the chosen ones marked

  // serve.matrix rows: sizes that agree merge; none at all when every size keeps "all" (the
  // top-level fusion then applies everywhere).
  std::vector<MatrixEntry> entries() const;
};

// `rounds`: bucket size -> each option's ms per round. The first option ("all", the most fused
// plan that passed the gate) is kept for a size unless another wins clearly (RoundComparison::
// clear_win); of several clear winners, the one with the lowest median ratio. A size with no
// rounds of the first option gets no choice.
MatrixChoice choose_matrix(const std::vector<FusionOption>& options, const std::map<int64_t, RoundTimes>& rounds,
                           const std::vector<int64_t>& rows);

}  // namespace fusor::tune
