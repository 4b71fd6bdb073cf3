// Chrome trace event format ("JSON Object Format"): complete events (ph "X") with microsecond
// timestamps, loadable in Perfetto (ui.perfetto.dev) and chrome://tracing. One event per step
// of every profiled run, on one thread track; each run is also a marker (an instant event).
#include <nlohmann/json.hpp>

#include "fusor/profile.h"

namespace fusor {

std::string chrome_trace_json(const ProfileReport& report) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1},
                    {"args", {{"name", "fusor " + report.model}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "executor"}}}});
  int last_run = -1;
  for (const TraceEvent& e : report.trace) {
    if (e.run != last_run) {
      events.push_back({{"name", "run " + std::to_string(e.run)}, {"ph", "i"}, {"s", "t"}, {"ts", e.ts_us},
                        {"pid", 1}, {"tid", 1}});
      last_run = e.run;
    }
    events.push_back({{"name", e.kernel},
                      {"cat", e.op},
                      {"ph", "X"},
                      {"ts", e.ts_us},
                      {"dur", e.dur_us},
                      {"pid", 1},
                      {"tid", 1},
                      {"args", {{"op", e.op}, {"node", e.node}, {"shapes", e.shapes}, {"run", e.run}}}});
  }
  nlohmann::json trace = {{"traceEvents", std::move(events)},
                          {"displayTimeUnit", "ms"},
                          {"otherData",
                           {{"model", report.model},
                            {"batch", report.batch},
                            {"seq", report.seq},
                            {"runs", report.runs},
                            {"kernels_per_inference", report.kernels_per_inference}}}};
  return trace.dump() + "\n";
}

}  // namespace fusor
