// The gate's report as JSON (schema in docs/check.md) and as JUnit XML.
#include <nlohmann/json.hpp>
#include <sstream>

#include "check/gate.h"

namespace fusor {
namespace {

nlohmann::json difference_json(const Difference& d) {
  return {{"max_abs", d.max_abs},       {"max_rel", d.max_rel},   {"ulp", d.max_ulp},
          {"worst_index", d.worst_index}, {"within", d.within},   {"nonfinite_mismatch", d.nonfinite_mismatch}};
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string check_report_json(const CheckReport& r) {
  nlohmann::json items = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const auto& i : r.items)
    items.push_back({{"name", i.name},
                     {"kind", i.kind},
                     {"tier", i.tier},
                     {"sample", i.sample},
                     {"round", i.round},
                     {"max_abs", i.vs_native.max_abs},
                     {"max_rel", i.vs_native.max_rel},
                     {"ulp", i.vs_native.max_ulp},
                     {"worst_index", i.vs_native.worst_index},
                     {"threshold", i.threshold},
                     {"native_vs_truth_max_abs", i.native_vs_truth},
                     {"fused_vs_truth_max_abs", i.fused_vs_truth},
                     {"status", item_status_name(i.status)}});
  for (const auto& o : r.outputs) {
    outputs.push_back({{"name", o.name},
                       {"sample", o.sample},
                       {"passed", o.passed},
                       {"vs_native", difference_json(o.vs_native)},
                       {"vs_truth", difference_json(o.vs_truth)},
                       {"native_vs_truth", difference_json(o.native_vs_truth)}});
    if (o.vs_native_pinned) outputs.back()["vs_native_pinned"] = difference_json(*o.vs_native_pinned);
  }
  nlohmann::json j = {{"passed", r.passed},       {"mode", r.mode},         {"rounds", r.rounds},
                      {"samples", r.samples},     {"items", items},         {"rolled_back", r.rolled_back},
                      {"outputs", outputs},       {"fusion_disabled", r.final_fusion.disabled}};
  if (!r.injected_into.empty()) j["fault_injected_into"] = r.injected_into;
  if (!r.skipped_edge_shapes.empty()) j["skipped_edge_shapes"] = r.skipped_edge_shapes;
  if (const auto& p = r.packing) {
    j["packing"] = {{"packable", p->packable}, {"passed", p->passed}, {"reason", p->reason}};
    if (p->packable) {
      j["packing"]["requests"] = p->requests;
      j["packing"]["vs_padded"] = difference_json(p->vs_padded);
      j["packing"]["vs_truth"] = difference_json(p->vs_truth);
      j["packing"]["worst_request"] = p->worst_request;
    }
  }
  if (const auto& k = r.kv_cache) {
    j["kv_cache"] = {{"applicable", k->applicable}, {"cached", k->cached}, {"passed", k->passed}, {"reason", k->reason}};
    if (k->cached) {
      j["kv_cache"]["sequences"] = k->sequences;
      j["kv_cache"]["steps_compared"] = k->steps_compared;
      j["kv_cache"]["vs_unfused"] = difference_json(k->vs_unfused);
      j["kv_cache"]["vs_truth"] = difference_json(k->vs_truth);
      j["kv_cache"]["worst"] = k->worst;
    }
  }
  return j.dump(2) + "\n";
}

std::string check_report_junit(const CheckReport& r) {
  std::ostringstream x;
  size_t failures = 0;
  for (const auto& o : r.outputs) failures += !o.passed;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"fusor check\">\n";
  x << "  <testsuite name=\"fusion items\" tests=\"" << r.items.size() << "\" failures=\"0\">\n";
  for (const auto& i : r.items) {
    x << "    <testcase classname=\"" << xml_escape(i.kind) << "\" name=\"" << xml_escape(i.name) << "\">";
    // A rolled-back item is handled, not a failure: the final plan runs without it.
    if (i.status == ItemStatus::RolledBack)
      x << "<system-out>rolled back at tier " << i.tier << " on sample " << xml_escape(i.sample) << ": max abs "
        << i.vs_native.max_abs << " &gt; threshold " << i.threshold << "</system-out>";
    x << "</testcase>\n";
  }
  x << "  </testsuite>\n";
  x << "  <testsuite name=\"model outputs\" tests=\"" << r.outputs.size() << "\" failures=\"" << failures << "\">\n";
  for (const auto& o : r.outputs) {
    x << "    <testcase classname=\"" << xml_escape(o.sample) << "\" name=\"" << xml_escape(o.name) << "\">";
    if (!o.passed)
      x << "<failure message=\"max abs " << o.vs_native.max_abs << " against native\"/>";
    x << "</testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace fusor
