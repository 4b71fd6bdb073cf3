#include "fusor/check.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "check/gate.h"
#include "io/atomic_file.h"
#include "onnx/external_data.h"

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
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return nlohmann::json::object();
  std::ifstream f(p);
  if (!f) return nlohmann::json::object();
  try {
    nlohmann::json j = nlohmann::json::parse(f);
    return j.is_object() ? j : nlohmann::json::object();
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();  // a damaged cache is ignored and rewritten
  }
}

// A file's size and modification time (ns), rsync's quick check; null when it cannot be read.
nlohmann::json file_stamp(const fs::path& p) {
  // Size, mtime and ctime: a file replaced by one of the same size with its mtime put back (cp -p,
  // rsync -t, os.utime) still has a new ctime, which nothing can set, so its bytes are hashed.
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  auto ns = [](const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; };
  return {{"size", static_cast<uint64_t>(st.st_size)}, {"mtime_ns", ns(st.st_mtim)}, {"ctime_ns", ns(st.st_ctim)}};
}

// The stamps of the model file and of its external data files: a verdict file that saw the same
// stamp trusts its hash instead of reading the whole model again (a second or more per load for
// a model of gigabytes). Writing a file moves its mtime, and always its ctime.
nlohmann::json model_stamp(const std::string& model_path, const std::vector<std::string>& external) {
  nlohmann::json stamp = file_stamp(model_path);
  if (stamp.is_null()) return stamp;
  stamp["external"] = nlohmann::json::array();
  for (const std::string& rel : external) {
    nlohmann::json e = file_stamp(fs::path(model_path).parent_path() / rel);
    if (e.is_null()) return nullptr;
    e["file"] = rel;
    stamp["external"].push_back(std::move(e));
  }
  return stamp;
}

// The model's bytes and its external data files' (named, in order), FNV-1a 64.
struct HashedModel {
  std::string hash;
  std::vector<std::string> external;
};
HashedModel hash_model(const std::string& model_path) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&h](const char* p, std::streamsize n) {
    for (std::streamsize i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  };
  auto add_file = [&add](const fs::path& path, const std::string& shown) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot read '" + shown + "' to hash the model");
    std::vector<char> buf(1 << 20);
    while (f) {
      f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      add(buf.data(), f.gcount());
    }
  };
  add_file(model_path, model_path);
  HashedModel out{"", external_data_files(model_path)};
  for (const std::string& rel : out.external) {  // a model without external data hashes as before
    add("", 1);
    add(rel.data(), static_cast<std::streamsize>(rel.size()));
    add("", 1);
    add_file(fs::path(model_path).parent_path() / rel, rel);
  }
  std::ostringstream text;
  text << std::hex << h;
  out.hash = text.str();
  return out;
}

// Writes `j` to `p` whole or not at all (serve may be reading it while check saves).
bool write_atomically(const fs::path& p, const nlohmann::json& j) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  return write_file_atomically(p, j.dump(2) + "\n");
}

// The model's hash as verdict file `j` vouches for it while the stamps it saw stand, else read
// from the files (once per call of the caller: `computed` keeps it).
std::string hash_for(const std::string& model_path, const nlohmann::json& j, std::optional<HashedModel>& computed) {
  if (j.contains("model_stamp") && j["model_stamp"].is_object() && j.contains("model_hash") && j["model_hash"].is_string()) {
    const nlohmann::json& saved = j["model_stamp"];
    std::vector<std::string> external;
    if (saved.contains("external") && saved["external"].is_array())
      for (const auto& e : saved["external"]) external.push_back(e.value("file", ""));
    if (model_stamp(model_path, external) == saved) return j["model_hash"].get<std::string>();
  }
  if (!computed) computed = hash_model(model_path);
  return computed->hash;
}

// The first saved verdict for config `key` in the verdict files whose model hash equals what
// `hash_of(file, its json)` says the model's hash is. A damaged file (a field of the wrong type) is
// ignored, as an unparsable one is.
template <class HashOf>
std::optional<Verdict> find_saved_verdict(const std::string& model_path, const std::string& key, HashOf hash_of) {
  for (const fs::path& p : places(model_path)) {
    const nlohmann::json j = read_json(p);
    try {
      if (!j.contains("verdicts") || !j["verdicts"].is_object() || !j["verdicts"].contains(key)) continue;
      const std::string hash = hash_of(p, j);
      if (j.value("model_hash", "") != hash) continue;
      const auto& v = j["verdicts"][key];
      if (!v.contains("passed") || !v.contains("rolled_back")) continue;  // damaged (verdict_file_damage)
      return Verdict{hash, key, v.at("passed").get<bool>(), v.at("rolled_back").get<std::vector<std::string>>(),
                     v.value("evidence", std::string())};
    } catch (const nlohmann::json::exception&) {
      continue;
    }
  }
  return std::nullopt;
}

// Why a verdict file that exists cannot be read as one ("" when it can, or when there is none):
// not JSON, not an object, or a verdict whose fields have the wrong types.
std::string verdict_file_damage(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return "";
  // A folder read as a stream threw libstdc++'s "basic_filebuf::underflow", naming no file.
  if (!fs::is_regular_file(p, ec)) return "not a regular file";
  std::ifstream f(p);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception&) {
    return "not valid JSON";
  }
  if (!j.is_object() || (j.contains("verdicts") && !j["verdicts"].is_object())) return "not a verdict file";
  if (j.contains("model_hash") && !j["model_hash"].is_string()) return "its model_hash is not text";
  const nlohmann::json verdicts = j.value("verdicts", nlohmann::json::object());
  for (const auto& [key, v] : verdicts.items()) {
    // Every saved verdict lists its rollbacks, none included: one without the list read as "none".
    const bool ok = v.is_object() && v.contains("passed") && v["passed"].is_boolean() && v.contains("rolled_back") &&
                    v["rolled_back"].is_array() &&
                    std::all_of(v["rolled_back"].begin(), v["rolled_back"].end(), [](const auto& s) { return s.is_string(); });
    if (!ok) return "the verdict for '" + key + "' has fields of the wrong type";
  }
  return "";
}

}  // namespace

std::string model_file_hash(const std::string& model_path) { return hash_model(model_path).hash; }

std::string verdict_config_key(const FusionConfig& f) {
  std::string key;
  for (const FusionSwitch& s : kFusionSwitches) key += std::string(s.label) + "=" + (f.*s.member ? "1" : "0") + ",";
  key += std::string("mode=") + precision_check_name(f.precision_check) + ",disabled=";
  for (const auto& d : f.disabled) key += d + ";";
  return key;
}

std::optional<Verdict> load_verdict(const std::string& model_path, const FusionConfig& fusion) {
  std::optional<HashedModel> computed;
  return find_saved_verdict(model_path, verdict_config_key(fusion), [&](const fs::path& p, const nlohmann::json& j) {
    const std::string hash = hash_for(model_path, j, computed);
    if (computed && j.value("model_hash", "") == hash) {  // vouched for by content: keep the stamps for next time
      nlohmann::json stamped = j;
      stamped["model_stamp"] = model_stamp(model_path, computed->external);
      write_atomically(p, stamped);  // best effort: a read-only folder only costs the next load a hash
    }
    return hash;
  });
}

std::string save_verdict(const std::string& model_path, const Verdict& verdict) {
  // The stamp first, then the bytes: a model replaced while it was checked (same size, even the
  // same modified time) would otherwise be vouched for by the old model's verdict.
  const nlohmann::json stamp = model_stamp(model_path, external_data_files(model_path));
  if (model_file_hash(model_path) != verdict.model_hash)
    throw Error("'" + model_path + "' changed while it was checked: its verdict is not saved; check it again");
  for (const fs::path& p : places(model_path)) {
    nlohmann::json j = read_json(p);
    const bool same_model = j.contains("model_hash") && j["model_hash"] == verdict.model_hash &&
                            j.contains("verdicts") && j["verdicts"].is_object();
    if (!same_model) j = {{"model_hash", verdict.model_hash}, {"verdicts", nlohmann::json::object()}};
    j["model_stamp"] = stamp;
    j["verdicts"][verdict.config_key] = {{"passed", verdict.passed}, {"rolled_back", verdict.rolled_back}};
    if (!verdict.evidence.empty()) j["verdicts"][verdict.config_key]["evidence"] = verdict.evidence;
    if (write_atomically(p, j)) return p.string();
  }
  throw Error("cannot save the precision verdict beside '" + model_path + "' or in the cache folder");
}

Verdict keep_saved_rollbacks(const std::string& model_path, Verdict fresh, std::vector<std::string>& kept,
                             std::string& kept_from) {
  kept.clear();
  const std::optional<Verdict> saved = find_saved_verdict(
      model_path, fresh.config_key, [&](const fs::path&, const nlohmann::json&) { return fresh.model_hash; });
  if (!saved) return fresh;
  for (const std::string& item : saved->rolled_back)
    if (std::find(fresh.rolled_back.begin(), fresh.rolled_back.end(), item) == fresh.rolled_back.end()) {
      fresh.rolled_back.push_back(item);
      kept.push_back(item);
    }
  kept_from = saved->evidence.empty() ? "an earlier check" : saved->evidence;
  return fresh;
}

void apply_precision_verdict(const Engine& engine, const std::string& model_path, FusionConfig& fusion,
                             bool gate_if_missing, const std::function<void(const std::string&)>& progress,
                             const std::map<std::string, Dims>& gate_dims) {
  if (fusion.precision_check == PrecisionCheck::Off) return;
  // Hashing a large model costs a moment: skip it when there is no verdict file to look in.
  bool any_file = false;
  for (const fs::path& p : places(model_path)) any_file = any_file || fs::exists(p);
  if (!any_file && !gate_if_missing) return;
  std::optional<Verdict> v = load_verdict(model_path, fusion);
  // A damaged file read as no verdict, so the fused plan ran with what the gate had rolled back
  // (or had failed) put back, silently. Without a gate to run here, it is an error. (Read again
  // only when no verdict was found: a run with one pays nothing more.)
  std::string damage, damaged;
  if (!v)
    for (const fs::path& p : places(model_path))
      if (damage.empty() && !(damage = verdict_file_damage(p)).empty()) damaged = p.string();
  if (!v && !damage.empty() && !gate_if_missing)
    throw Error("the precision verdict file " + damaged + " is damaged (" + damage +
                    "): run fusor check to save a new one, or set fusion.precision_check: off",
                ErrorKind::InvalidArgument);
  if (!v && gate_if_missing) {
    const std::string why = damage.empty() ? std::string("no saved precision verdict for this model and config")
                                           : "the saved precision verdict file " + damaged + " is damaged (" + damage + ")";
    if (progress) progress(why + ": running the gate first");
    CheckOptions o;
    o.mode = fusion.precision_check;
    o.fusion = fusion;
    o.dims = gate_dims.empty() ? engine.bind_dims({}, 1, 16) : gate_dims;
    o.progress = progress;
    o.model_file = model_path;
    const std::string checked_hash = model_file_hash(model_path);  // as check does: before the gate
    CheckReport r;
    try {
      r = run_precision_gate(engine, o);
    } catch (const Error& e) {
      std::string at;
      for (const auto& [name, dims] : o.dims) at += (at.empty() ? "" : " ") + name + "=" + dims_to_string(dims);
      throw Error("the precision gate, run first for want of a saved verdict, cannot run the model at " + at + ": " +
                      e.what() + "; save a verdict at shapes it takes (fusor check MODEL --config FILE --seq N or "
                      "--shape NAME=...) or set fusion.precision_check: off",
                  e.kind());
    }
    v = Verdict{checked_hash, verdict_config_key(fusion), r.passed, r.rolled_back, "generated samples"};
    std::string where = save_verdict(model_path, *v);
    if (progress) progress("precision verdict saved to " + where);
  }
  if (!v) return;
  if (!v->passed) throw Error("the precision gate's verdict for '" + model_path + "' is a failure: run fusor check");
  for (const auto& name : v->rolled_back)
    if (std::find(fusion.disabled.begin(), fusion.disabled.end(), name) == fusion.disabled.end())
      fusion.disabled.push_back(name);
}

std::vector<std::string> model_data_files(const std::string& model_path) {
  std::vector<std::string> files;
  const fs::path folder = fs::path(model_path).parent_path();
  for (const std::string& data : external_data_files(model_path)) files.push_back((folder / data).string());
  return files;
}

}  // namespace fusor
