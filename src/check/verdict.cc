#include "fusor/check.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <unistd.h>

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

// The model file's size and modification time (ns), rsync's quick check: a verdict file that
// saw the same stamp trusts its hash instead of reading the whole model again (a second or more
// per load for a model of gigabytes). Writing the file moves its mtime.
nlohmann::json file_stamp(const std::string& model_path) {
  std::error_code ec;
  const auto size = fs::file_size(model_path, ec);
  if (ec) return nullptr;
  const auto mtime = fs::last_write_time(model_path, ec);
  if (ec) return nullptr;
  return {{"size", size}, {"mtime_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count()}};
}

// Writes `j` to `p` through a temporary file and a rename, so that a reader in another process
// (serve starting while check saves) sees the old file or the new one, never half of one.
bool write_atomically(const fs::path& p, const nlohmann::json& j) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  const fs::path tmp = p.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    if (!f || !(f << j.dump(2) << "\n")) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

// The model's hash as verdict file `j` may vouch for it, else read from the file (once per call
// of the caller: `computed` keeps it).
std::string hash_for(const std::string& model_path, const nlohmann::json& j, const nlohmann::json& stamp,
                     std::optional<std::string>& computed) {
  if (!stamp.is_null() && j.value("model_stamp", nlohmann::json()) == stamp && j.value("model_hash", "") != "")
    return j["model_hash"].get<std::string>();
  if (!computed) computed = model_file_hash(model_path);
  return *computed;
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
  const std::string key = verdict_config_key(fusion);
  const nlohmann::json stamp = file_stamp(model_path);
  std::optional<std::string> computed;
  for (const fs::path& p : places(model_path)) {
    const nlohmann::json j = read_json(p);
    try {
      if (!j.contains("verdicts") || !j["verdicts"].is_object() || !j["verdicts"].contains(key)) continue;
      const std::string hash = hash_for(model_path, j, stamp, computed);
      if (j.value("model_hash", "") != hash) continue;
      if (computed && !stamp.is_null()) {  // vouched for by content: keep the stamp for next time
        nlohmann::json stamped = j;
        stamped["model_stamp"] = stamp;
        write_atomically(p, stamped);  // best effort: a read-only folder only costs the next load a hash
      }
      const auto& v = j["verdicts"][key];
      return Verdict{hash, key, v.value("passed", false), v.value("rolled_back", std::vector<std::string>{})};
    } catch (const nlohmann::json::exception&) {
      continue;  // a damaged file (a field of the wrong type) is ignored, as an unparsable one is
    }
  }
  return std::nullopt;
}

std::string save_verdict(const std::string& model_path, const Verdict& verdict) {
  for (const fs::path& p : places(model_path)) {
    nlohmann::json j = read_json(p);
    const bool same_model = j.contains("model_hash") && j["model_hash"] == verdict.model_hash &&
                            j.contains("verdicts") && j["verdicts"].is_object();
    if (!same_model) j = {{"model_hash", verdict.model_hash}, {"verdicts", nlohmann::json::object()}};
    j["model_stamp"] = file_stamp(model_path);
    j["verdicts"][verdict.config_key] = {{"passed", verdict.passed}, {"rolled_back", verdict.rolled_back}};
    if (write_atomically(p, j)) return p.string();
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
