// The precision gate's verdict, saved beside the model so that run, bench, profile and serve
// apply it without checking again: the items rolled back for one model file (by content hash)
// and one fusion config (by its switches and mode). The file is MODEL.fusor-verdicts.json, one
// entry per config; when the model's folder is not writable, the same file name under the
// cache folder (FUSOR_CACHE_DIR, XDG_CACHE_HOME/fusor, ~/.cache/fusor).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/engine.h"

namespace fusor {

struct Verdict {
  std::string model_hash;  // FNV-1a 64 of the model file's bytes, hex
  std::string config_key;  // the fusion switches, disabled list and mode it was checked with
  bool passed = false;
  std::vector<std::string> rolled_back;
};

std::string model_file_hash(const std::string& model_path);
std::string verdict_config_key(const FusionConfig& fusion);

std::optional<Verdict> load_verdict(const std::string& model_path, const FusionConfig& fusion);
// Returns the path written; throws fusor::Error when neither place can be written.
std::string save_verdict(const std::string& model_path, const Verdict& verdict);

// What run, bench, profile and serve do with `fusion.precision_check`: with `off`, nothing; else
// the saved verdict's rollbacks join fusion.disabled. When there is none and `gate_if_missing`,
// the gate runs first (batch 1, seq 16, generated samples), and its verdict is saved. Throws
// fusor::Error when the gate's final plan still fails.
void apply_precision_verdict(const Engine& engine, const std::string& model_path, FusionConfig& fusion,
                             bool gate_if_missing, const std::function<void(const std::string&)>& progress = {});

}  // namespace fusor
