#include "fusor/check.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "check/gate.h"

namespace fusor {
namespace fs = std::filesystem;
namespace {

fs::path cache_folder() {
  if (const char* d = std::getenv("FUSOR_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "fusor";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "fusor";
  return fs::temp_directory_path() / "fusor";
}

std::vector<fs::path> places(const std::string& model_path) {
  fs::path beside = fs::path(model_path).string() + ".fusor-verdicts.json";
  return {beside, cache_folder() / beside.filename()};
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return nlohmann::json::object();
  try {
    nlohmann::json j = nlohmann::json::parse(f);
    return j.is_object() ? j : nlohmann::json::object();
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();  // a damaged cache is ignored and rewritten
  }
}

}  // namespace

std::string model_file_hash(const std::string& model_path) {
  std::ifstream f(model_path, std::ios::binary);
  if (!f) throw Error("cannot read model '" + model_path + "' to hash it");
  uint64_t h = 1469598103934665603ull;
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    for (std::streamsize i = 0; i < f.gcount(); ++i) h = (h ^ static_cast<unsigned char>(buf[static_cast<size_t>(i)])) * 1099511628211ull;
  }
  std::ostringstream s;
  s << std::hex << h;
  return s.str();
}

std::string verdict_config_key(const FusionConfig& f) {
  std::string key;
  for (const FusionSwitch& s : kFusionSwitches) key += std::string(s.label) + "=" + (f.*s.member ? "1" : "0") + ",";
  key += std::string("mode=") + precision_check_name(f.precision_check) + ",disabled=";
  for (const auto& d : f.disabled) key += d + ";";
  return key;
}

std::optional<Verdict> load_verdict(const std::string& model_path, const FusionConfig& fusion) {
  const std::string hash = model_file_hash(model_path), key = verdict_config_key(fusion);
  for (const fs::path& p : places(model_path)) {
    nlohmann::json j = read_json(p);
    if (j.value("model_hash", "") != hash || !j.contains("verdicts") || !j["verdicts"].contains(key)) continue;
    const auto& v = j["verdicts"][key];
    Verdict out{hash, key, v.value("passed", false), v.value("rolled_back", std::vector<std::string>{})};
    return out;
  }
  return std::nullopt;
}

std::string save_verdict(const std::string& model_path, const Verdict& verdict) {
  for (const fs::path& p : places(model_path)) {
    nlohmann::json j = read_json(p);
    if (j.value("model_hash", "") != verdict.model_hash) j = {{"model_hash", verdict.model_hash}, {"verdicts", nlohmann::json::object()}};
    j["verdicts"][verdict.config_key] = {{"passed", verdict.passed}, {"rolled_back", verdict.rolled_back}};
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream f(p);
    if (f && (f << j.dump(2) << "\n")) return p.string();
  }
  throw Error("cannot save the precision verdict beside '" + model_path + "' or in the cache folder");
}

void apply_precision_verdict(const Engine& engine, const std::string& model_path, FusionConfig& fusion,
                             bool gate_if_missing, const std::function<void(const std::string&)>& progress) {
  if (fusion.precision_check == PrecisionCheck::Off) return;
  // Hashing a large model costs a moment: skip it when there is no verdict file to look in.
  bool any_file = false;
  for (const fs::path& p : places(model_path)) any_file = any_file || fs::exists(p);
  if (!any_file && !gate_if_missing) return;
  std::optional<Verdict> v = load_verdict(model_path, fusion);
  if (!v && gate_if_missing) {
    if (progress) progress("no saved precision verdict for this model and config: running the gate first");
    CheckOptions o;
    o.mode = fusion.precision_check;
    o.fusion = fusion;
    o.dims = engine.bind_dims({}, 1, 16);
    o.progress = progress;
    o.model_file = model_path;
    CheckReport r = run_precision_gate(engine, o);
    v = Verdict{model_file_hash(model_path), verdict_config_key(fusion), r.passed, r.rolled_back};
    std::string where = save_verdict(model_path, *v);
    if (progress) progress("precision verdict saved to " + where);
  }
  if (!v) return;
  if (!v->passed) throw Error("the precision gate's verdict for '" + model_path + "' is a failure: run fusor check");
  for (const auto& name : v->rolled_back)
    if (std::find(fusion.disabled.begin(), fusion.disabled.end(), name) == fusion.disabled.end())
      fusion.disabled.push_back(name);
}

}  // namespace fusor
