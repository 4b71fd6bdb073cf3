// The config matrix: for each batch-size bucket, the fusion option that ran it fastest.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fusor/tuned_record.h"
#include "tune/service_times.h"

namespace fusor::tune {

struct MatrixChoice {
  std::vector<std::pair<int64_t, const FusionOption*>> per_rows;  // ascending bucket sizes
  std::vector<MatrixTiming> timings;  // every option's time per size, the chosen ones marked

  // serve.matrix rows: sizes that agree merge; none at all when every size keeps "all" (the
  // top-level fusion then applies everywhere).
  std::vector<MatrixEntry> entries() const;
};

// `times`: option name -> ms per bucket size. "all" (the first option) is kept unless another
// is more than 3% faster: a switch must be a clear win, not timing noise.
MatrixChoice choose_matrix(const std::vector<FusionOption>& options, const std::map<std::string, ServiceTimes>& times,
                           const std::vector<int64_t>& rows);

}  // namespace fusor::tune
