// DecoderSpec: a decoder export's names, cache geometry, special ids and context length, from the
// model's inputs and the JSON configs beside it (Hugging Face's config.json and
// generation_config.json, ONNX Runtime GenAI's genai_config.json).
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "fusor/decoder.h"
#include "fusor/error.h"
#include "generate/name_template.h"
#include "io/json_depth.h"

namespace fusor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The file's JSON object, or null when the file does not exist. Unreadable or malformed files
// are errors: a config that is there but wrong should not be silently skipped.
json read_json(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return nullptr;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read " + file.string(), ErrorKind::InvalidArgument);
  std::ostringstream text;
  text << in.rdbuf();
  if (!json_depth_within(text.str()))
    throw Error(file.string() + ": nests deeper than " + std::to_string(kMaxJsonDepth) + " levels", ErrorKind::InvalidModel);
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(file.string() + ": not a JSON object", ErrorKind::InvalidModel);
  return j;
}

TokenId token_id(const json& v, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > std::numeric_limits<TokenId>::max())
    throw Error(where + ": expected a token id (a non-negative integer)", ErrorKind::InvalidModel);
  return static_cast<TokenId>(v.get<int64_t>());
}

// eos_token_id is an id or a list of ids in both Hugging Face's and GenAI's configs.
std::vector<TokenId> token_ids(const json& v, const std::string& where) {
  std::vector<TokenId> ids;
  if (v.is_array())
    for (const json& item : v) ids.push_back(token_id(item, where));
  else ids.push_back(token_id(v, where));
  return ids;
}

// Special ids from the first config that names them (generation_config.json is what
// transformers' generate() reads, so it wins).
void read_special_ids(DecoderSpec& spec, const std::vector<std::pair<json, std::string>>& configs) {
  bool eos = false, bos = false, pad = false;
  for (const auto& [cfg, where] : configs) {
    if (!cfg.is_object()) continue;
    if (!eos && cfg.contains("eos_token_id") && !cfg["eos_token_id"].is_null())
      spec.eos_ids = token_ids(cfg["eos_token_id"], where + " eos_token_id"), eos = true;
    if (!bos && cfg.contains("bos_token_id") && !cfg["bos_token_id"].is_null())
      spec.bos_id = token_id(cfg["bos_token_id"], where + " bos_token_id"), bos = true;
    if (!pad && cfg.contains("pad_token_id") && !cfg["pad_token_id"].is_null())
      spec.pad_id = token_id(cfg["pad_token_id"], where + " pad_token_id"), pad = true;
  }
}

// transformers' sampling keys of generation_config.json; null is unset, as transformers reads it.
GenerationDefaults read_generation_defaults(const json& generation, const std::string& where) {
  GenerationDefaults d;
  if (!generation.is_object()) return d;
  auto present = [&](const char* key) { return generation.contains(key) && !generation[key].is_null(); };
  auto bad = [&](const char* key, const char* what) {
    return Error(where + ": " + key + " must be " + what, ErrorKind::InvalidModel);
  };
  auto number = [&](const char* key, bool (*ok)(double), const char* what) -> std::optional<double> {
    if (!present(key)) return std::nullopt;
    if (!generation[key].is_number() || !ok(generation[key].get<double>())) throw bad(key, what);
    return generation[key].get<double>();
  };
  auto integer = [&](const char* key, int64_t least) -> std::optional<int64_t> {
    if (!present(key)) return std::nullopt;
    if (!generation[key].is_number_integer() || generation[key].get<int64_t>() < least)
      throw bad(key, least == 0 ? "a non-negative integer" : "a positive integer");
    return generation[key].get<int64_t>();
  };
  if (present("do_sample")) {
    if (!generation["do_sample"].is_boolean()) throw bad("do_sample", "true or false");
    d.do_sample = generation["do_sample"].get<bool>();
  }
  d.temperature = number("temperature", [](double v) { return v >= 0 && v <= 100; }, "a number in [0, 100]");
  d.top_p = number("top_p", [](double v) { return v > 0 && v <= 1; }, "a number in (0, 1]");
  d.repetition_penalty = number("repetition_penalty", [](double v) { return v > 0 && v <= 100; }, "a number in (0, 100]");
  d.top_k = integer("top_k", 0);
  d.max_new_tokens = integer("max_new_tokens", 1);
  return d;
}

int64_t read_context_length(const json& genai_model, const json& config, const std::string& folder) {
  auto positive = [&](const json& v, const std::string& what) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0)
      throw Error(folder + ": " + what + " must be a positive integer", ErrorKind::InvalidModel);
    return v.get<int64_t>();
  };
  if (genai_model.is_object() && genai_model.contains("context_length"))
    return positive(genai_model["context_length"], "genai_config.json model.context_length");
  if (config.is_object())
    for (const char* key : {"max_position_embeddings", "n_positions"})
      if (config.contains(key)) return positive(config[key], std::string("config.json ") + key);
  return 0;
}

// genai_config.json's model.decoder.inputs/outputs: each key it has replaces that name.
void read_genai_names(DecoderSpec& spec, const json& decoder, const std::string& where) {
  auto take = [&](const json& group, const char* key, std::string& name) {
    if (!group.is_object() || !group.contains(key)) return;
    if (!group[key].is_string()) throw Error(where + ": " + key + " must be a string", ErrorKind::InvalidModel);
    name = group[key].get<std::string>();
  };
  const json inputs = decoder.value("inputs", json());
  const json outputs = decoder.value("outputs", json());
  take(inputs, "input_ids", spec.input_ids);
  take(inputs, "attention_mask", spec.attention_mask);
  take(inputs, "position_ids", spec.position_ids);
  take(inputs, "past_key_names", spec.past_key);
  take(inputs, "past_value_names", spec.past_value);
  take(outputs, "logits", spec.logits);
  take(outputs, "present_key_names", spec.present_key);
  take(outputs, "present_value_names", spec.present_value);
  for (const char* combined : {"past_names", "present_names"})
    if ((inputs.is_object() && inputs.contains(combined)) || (outputs.is_object() && outputs.contains(combined)))
      throw Error(where + ": combined key/value cache tensors (" + combined + ") are not supported",
                  ErrorKind::UnsupportedOp);
}

const TensorInfo* find(const std::vector<TensorInfo>& infos, const std::string& name) {
  for (const TensorInfo& info : infos)
    if (info.name == name) return &info;
  return nullptr;
}

// The head size the configs give (genai_config.json's decoder.head_size, config.json's head_dim
// or hidden_size / num_attention_heads), or 0: ONNX Runtime GenAI's exports name the cache's last
// dim ("kv_cache_dim").
int64_t configured_head_size(const json& genai_decoder, const json& config) {
  auto positive = [](const json& j, const char* key) -> int64_t {
    return j.is_object() && j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() > 0 ? j[key].get<int64_t>() : 0;
  };
  if (int64_t d = positive(genai_decoder, "head_size")) return d;
  if (int64_t d = positive(config, "head_dim")) return d;
  const int64_t hidden = positive(config, "hidden_size"), heads = positive(config, "num_attention_heads");
  return hidden && heads && hidden % heads == 0 ? hidden / heads : 0;
}

// Counts the layers from the past-key template and checks that each has its four tensors with
// one cache shape [batch, kv_heads, past, head_dim], the heads fixed and the head size fixed or
// configured (`head_size`, 0 when no config gives it).
void read_cache(DecoderSpec& spec, const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& outputs,
                int64_t head_size, const std::string& where) {
  for (const std::string* t : {&spec.past_key, &spec.past_value, &spec.present_key, &spec.present_value})
    check_name_template(*t, where);
  while (find(inputs, format_name(spec.past_key, spec.layers))) ++spec.layers;
  if (spec.layers == 0)
    throw Error(where + ": no input '" + format_name(spec.past_key, 0) + "': not a decoder with a key/value cache",
                ErrorKind::InvalidModel);
  for (int layer = 0; layer < spec.layers; ++layer) {
    const std::string names[4] = {format_name(spec.past_key, layer), format_name(spec.past_value, layer),
                                  format_name(spec.present_key, layer), format_name(spec.present_value, layer)};
    for (int i = 0; i < 4; ++i) {
      const TensorInfo* info = find(i < 2 ? inputs : outputs, names[i]);
      if (!info)
        throw Error(where + ": no " + (i < 2 ? "input '" : "output '") + names[i] + "'", ErrorKind::InvalidModel);
      if (i >= 2) continue;
      std::vector<int64_t> dims = info->dims;
      if (dims.size() == 4 && dims[3] <= 0) dims[3] = head_size;
      if (!info->has_shape || dims.size() != 4 || dims[1] <= 0 || dims[3] <= 0)
        throw Error(where + ": input '" + names[i] + "' must be [batch, kv_heads, past, head_dim] with fixed heads and head size",
                    ErrorKind::UnsupportedOp);
      if (layer == 0 && i == 0) {
        spec.kv_heads = dims[1], spec.head_dim = dims[3], spec.cache_dtype = info->dtype;
      } else if (dims[1] != spec.kv_heads || dims[3] != spec.head_dim || info->dtype != spec.cache_dtype) {
        throw Error(where + ": input '" + names[i] + "' differs from the other layers' cache shape or type",
                    ErrorKind::UnsupportedOp);
      }
    }
  }
}

// Every input must be one the loop feeds, so a model that needs something else fails here with
// its name rather than at the first step.
void check_inputs(DecoderSpec& spec, const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& outputs,
                  const std::string& where) {
  std::set<std::string> fed = {spec.input_ids, spec.attention_mask, spec.position_ids};
  for (int layer = 0; layer < spec.layers; ++layer)
    fed.insert({format_name(spec.past_key, layer), format_name(spec.past_value, layer)});
  const TensorInfo* ids = find(inputs, spec.input_ids);
  if (!ids) throw Error(where + ": no input '" + spec.input_ids + "'", ErrorKind::InvalidModel);
  if (ids->dtype != DType::Int64 && ids->dtype != DType::Int32)
    throw Error(where + ": input '" + spec.input_ids + "' must be int64 or int32", ErrorKind::UnsupportedOp);
  auto is_float = [](DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; };
  if (!is_float(spec.cache_dtype))
    throw Error(where + ": the key/value cache must be float32, float16 or bfloat16", ErrorKind::UnsupportedOp);
  const TensorInfo* logits = find(outputs, spec.logits);
  if (!logits) throw Error(where + ": no output '" + spec.logits + "'", ErrorKind::InvalidModel);
  if (!is_float(logits->dtype))
    throw Error(where + ": output '" + spec.logits + "' must be float32, float16 or bfloat16", ErrorKind::UnsupportedOp);
  if (logits->has_shape && !logits->dims.empty() && logits->dims.back() > 0) spec.vocab_size = logits->dims.back();
  for (const TensorInfo& in : inputs) {
    if (fed.count(in.name)) continue;
    if (in.name == "use_cache_branch" && in.dtype == DType::Bool) {
      spec.use_cache_branch = in.name;
      continue;
    }
    throw Error(where + ": input '" + in.name + "' is not one a decoder step feeds", ErrorKind::UnsupportedOp);
  }
}

}  // namespace

std::string DecoderSpec::model_file_of(const std::string& path) {
  std::error_code ec;
  fs::path file = path;
  const bool folder = fs::is_directory(file, ec);
  if (folder) {
    const json genai = read_json(file / "genai_config.json");
    std::string name = "model.onnx";
    if (genai.is_object() && genai.contains("model") && genai["model"].is_object()) {
      const json decoder = genai["model"].value("decoder", json());
      if (decoder.is_object() && decoder.contains("filename") && decoder["filename"].is_string())
        name = decoder["filename"].get<std::string>();
    }
    // A name inside the folder: the folder's own config could otherwise load any .onnx file on
    // the machine (and that file's folder's weights). Checked as written, not through symlinks:
    // a Hugging Face snapshot's files are links into its cache.
    const fs::path rel = fs::path(name).lexically_normal();
    if (rel.is_absolute() || rel.empty() || *rel.begin() == ".." || rel == ".")
      throw Error(path + "/genai_config.json: model.decoder.filename '" + name + "' is outside the model folder",
                  ErrorKind::InvalidModel);
    file /= name;
  }
  if (!fs::is_regular_file(file, ec))
    throw Error(folder ? "the folder " + path + " holds no " + file.filename().string() + ": give the .onnx file"
                       : "cannot read " + file.string(),
                ErrorKind::InvalidArgument);
  return file.string();
}

DecoderSpec DecoderSpec::load(const std::string& path) {
  const std::string file = model_file_of(path);
  return describe(Engine::load(file), file);
}

DecoderSpec DecoderSpec::describe(const Engine& engine, const std::string& model_file) {
  DecoderSpec spec;
  spec.model_file = model_file;
  fs::path folder = fs::path(model_file).parent_path();
  spec.folder = folder.empty() ? "." : folder.string();

  const json genai = read_json(folder / "genai_config.json");
  const json generation = read_json(folder / "generation_config.json");
  const json config = read_json(folder / "config.json");
  json genai_model, genai_decoder;
  if (genai.is_object() && genai.contains("model")) {
    genai_model = genai["model"];
    if (!genai_model.is_object()) throw Error(spec.folder + "/genai_config.json: model must be an object", ErrorKind::InvalidModel);
    genai_decoder = genai_model.value("decoder", json());
    if (genai_decoder.is_object()) read_genai_names(spec, genai_decoder, spec.folder + "/genai_config.json");
  }

  const std::vector<TensorInfo> inputs = engine.inputs();
  const std::vector<TensorInfo> outputs = engine.outputs();
  read_cache(spec, inputs, outputs, configured_head_size(genai_decoder, config), model_file);
  check_inputs(spec, inputs, outputs, model_file);
  read_special_ids(spec, {{generation, spec.folder + "/generation_config.json"},
                          {genai_model, spec.folder + "/genai_config.json"},
                          {config, spec.folder + "/config.json"}});
  spec.context_length = read_context_length(genai_model, config, spec.folder);
  spec.generation_defaults = read_generation_defaults(generation, spec.folder + "/generation_config.json");
  return spec;
}

std::string GenerationDefaults::describe() const {
  std::ostringstream out;
  auto add = [&](const char* key, const auto& value) {
    if (!value) return;
    if (out.tellp() > 0) out << ", ";
    out << key << " " << *value;
  };
  if (do_sample) out << "do_sample " << (*do_sample ? "true" : "false");
  add("temperature", temperature);
  add("top_k", top_k);
  add("top_p", top_p);
  add("repetition_penalty", repetition_penalty);
  add("max_new_tokens", max_new_tokens);
  return out.str();
}

bool is_decoder_export(const Engine& engine, const std::string& model_file) {
  std::error_code ec;
  if (fs::exists(fs::path(model_file).parent_path() / "genai_config.json", ec)) return true;
  for (const TensorInfo& in : engine.inputs())
    if (in.name.rfind("past_key_values.", 0) == 0) return true;
  return false;
}

}  // namespace fusor
