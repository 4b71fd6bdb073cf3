#include "serve/json_infer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "serve/classification.h"
#include "serve/json_dom.h"
#include "serve/json_tensor_data.h"
#include "serve/tensor_codec.h"

namespace fusor::serve {
namespace {

using nlohmann::json;
using simdjson::dom::element;
using simdjson::dom::element_type;

RequestError bad(const std::string& m) { return {Code::BadRequest, m}; }

std::optional<element> field(const element& object, const char* key) {
  element e;
  if (object.at_key(key).get(e)) return std::nullopt;
  return e;
}

std::string string_field(const element& object, const char* key, const std::string& what) {
  auto e = field(object, key);
  if (!e) return "";
  if (e->type() != element_type::STRING) throw bad(what + " '" + key + "' must be a string");
  return std::string(e->get_string().value_unsafe());
}

// A boolean parameter; absent or null: none. Another type is a 400, as Triton answers it: "yes"
// read as false sent the client JSON it had not asked for.
std::optional<bool> bool_field(const element& object, const char* key) {
  auto e = field(object, key);
  if (!e || e->type() == element_type::NULL_VALUE) return std::nullopt;
  if (e->type() != element_type::BOOL) throw bad(std::string("parameter '") + key + "' must be true or false");
  return e->get_bool().value_unsafe();
}

bool is_object(const std::optional<element>& e) { return e && e->type() == element_type::OBJECT; }
bool is_array(const std::optional<element>& e) { return e && e->type() == element_type::ARRAY; }
bool is_integer(const element& e) { return e.type() == element_type::INT64 || e.type() == element_type::UINT64; }
int64_t integer(const element& e) {  // integers above INT64_MAX wrap, as they always have
  return e.type() == element_type::UINT64 ? static_cast<int64_t>(e.get_uint64().value_unsafe())
                                          : e.get_int64().value_unsafe();
}

// One parser per protocol thread keeps its buffers from request to request; one that grew for
// an unusually large body is dropped after it, so 32 threads do not each keep the largest.
constexpr size_t kKeptParserBytes = size_t{1} << 20;

// A JSON string, escaped; bytes that are not UTF-8 become U+FFFD.
void append_quoted(std::string& out, const std::string& s) {
  out += json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

HttpInferRequest parse_infer_request(const std::string& body, std::optional<size_t> header_length) {
  size_t json_len = header_length.value_or(body.size());
  if (json_len > body.size())
    throw bad("Inference-Header-Content-Length " + std::to_string(json_len) + " exceeds the body's " +
              std::to_string(body.size()) + " bytes");
  thread_local auto parser = std::make_unique<simdjson::dom::parser>();
  struct Trim {
    ~Trim() {
      if (parser->capacity() > kKeptParserBytes) parser = std::make_unique<simdjson::dom::parser>();
    }
  } trim;
  // A UTF-8 byte order mark is allowed before the JSON, as it was with the previous parser.
  size_t start = json_len >= 3 && body.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  element j;
  if (auto error = parser->parse(body.data() + start, json_len - start).get(j)) {
    // Python's json.dumps writes NaN and Infinity, which JSON has no literals for (tritonclient
    // with binary_data=False sends them so).
    const std::string_view text(body.data() + start, json_len - start);
    const bool nan = text.find("NaN") != std::string_view::npos || text.find("Infinity") != std::string_view::npos;
    throw bad(std::string("malformed JSON in the request body: ") + simdjson::error_message(error) +
              (nan ? " (NaN and Infinity have no JSON literal: send such tensors as binary data)" : ""));
  }
  if (j.type() != element_type::OBJECT) throw bad("the request body must be a JSON object");
  HttpInferRequest r;
  r.id = string_field(j, "id", "request");
  if (auto p = field(j, "parameters")) {
    if (p->type() != element_type::OBJECT) throw bad("request 'parameters' must be an object");
    r.cls = string_field(*p, "class", "parameter");
    r.binary_default = bool_field(*p, "binary_data_output").value_or(false);
  }
  auto inputs = field(j, "inputs");
  if (!is_array(inputs)) throw bad("the request must have an 'inputs' array");
  size_t offset = json_len;  // binary data follows the JSON, in input order
  for (element in : items(*inputs)) {
    if (in.type() != element_type::OBJECT) throw bad("each of 'inputs' must be an object");
    WireTensor w{string_field(in, "name", "input"), string_field(in, "datatype", "input"), {}};
    if (w.name.empty()) throw bad("an input has no 'name'");
    auto shape = field(in, "shape");
    if (!is_array(shape)) throw bad("input '" + w.name + "' has no 'shape' array");
    for (element d : items(*shape)) {
      if (!is_integer(d)) throw bad("input '" + w.name + "' shape must hold integers");
      w.shape.push_back(integer(d));
    }
    if (r.inputs.count(w.name)) throw bad("input '" + w.name + "' is given twice");
    std::optional<size_t> binary_size;
    if (auto p = field(in, "parameters"); is_object(p)) {
      if (field(*p, kSharedMemoryRegion)) throw shared_memory_refused(w.name);
      if (auto b = field(*p, "binary_data_size")) {
        uint64_t size;
        if (b->get_uint64().get(size))  // also refuses negative integers and reals
          throw bad("input '" + w.name + "' binary_data_size must be a non-negative integer");
        binary_size = size;
      }
    }
    if (binary_size) {
      if (*binary_size > body.size() - offset)
        throw bad("input '" + w.name + "' binary_data_size " + std::to_string(*binary_size) + " runs past the body");
      r.inputs[w.name] = from_raw(w, body.data() + offset, *binary_size);
      offset += *binary_size;
    } else {
      auto data = field(in, "data");
      if (!data) throw bad("input '" + w.name + "' has neither 'data' nor binary_data_size");
      r.inputs[w.name] = decode_tensor_data(w, *data);
    }
  }
  if (offset != body.size()) throw bad("the body has " + std::to_string(body.size() - offset) + " bytes of binary data no input claims");
  if (auto outs = field(j, "outputs")) {
    if (outs->type() != element_type::ARRAY) throw bad("request 'outputs' must be an array");
    for (element o : items(*outs)) {
      if (o.type() != element_type::OBJECT) throw bad("each of 'outputs' must be an object");
      HttpInferRequest::Output out{string_field(o, "name", "output"), r.binary_default};
      if (auto p = field(o, "parameters"); is_object(p)) {
        if (field(*p, kSharedMemoryRegion)) throw shared_memory_refused(out.name, "output");
        out.binary = bool_field(*p, "binary_data").value_or(out.binary);
        if (auto k = field(*p, "classification")) {
          if (!is_integer(*k) || integer(*k) < 0) throw bad("output '" + out.name + "': 'classification' must be a count");
          out.classes = integer(*k);
        }
      }
      // Each copy was answered in full: a few KB asking for one output 50,000 times came back as
      // gigabytes. Triton refused it too ("output ... already exists in request").
      for (const auto& earlier : r.outputs)
        if (earlier.name == out.name) throw bad("output '" + out.name + "' is requested twice");
      r.outputs.push_back(std::move(out));
    }
  }
  return r;
}

// Written by hand rather than through a JSON tree: "data" arrays of 10^5 values go straight into
// the body. Keys keep the sorted order the tree used to give them.
HttpBody infer_response(const std::string& model, const HttpInferRequest& req, const Signature& sig,
                        const Tensors& outputs) {
  std::vector<HttpInferRequest::Output> wanted = req.outputs;
  if (wanted.empty())
    for (const auto& o : sig.outputs) wanted.push_back({o.name, req.binary_default});
  std::vector<const Tensor*> tensors;
  std::vector<std::optional<Classes>> classes;  // for outputs asked for as classes
  size_t binary_bytes = 0;
  for (const auto& w : wanted) {
    auto it = outputs.find(w.name);
    if (it == outputs.end()) throw bad("unknown output '" + w.name + "' requested");
    tensors.push_back(&it->second);
    classes.push_back(w.classes > 0 ? std::optional(classify(it->second, w.classes, sig.batched, w.name)) : std::nullopt);
    if (w.binary) binary_bytes += it->second.nbytes();
  }
  std::vector<std::string> class_bytes(wanted.size());  // the binary form of each classes output
  HttpBody b;
  std::string& out = b.body;
  out.reserve(256 + binary_bytes);
  out += '{';
  if (!req.id.empty()) {
    out += "\"id\":";
    append_quoted(out, req.id);
    out += ',';
  }
  out += "\"model_name\":";
  append_quoted(out, model);
  out += ",\"model_version\":";
  append_quoted(out, kModelVersion);
  out += ",\"outputs\":[";
  for (size_t i = 0; i < wanted.size(); ++i) {
    const Tensor& t = *tensors[i];
    const std::optional<Classes>& c = classes[i];
    out += i ? ",{" : "{";
    if (!wanted[i].binary) {
      out += "\"data\":";
      if (c) {
        out += '[';
        for (size_t j = 0; j < c->items.size(); ++j) {
          if (j) out += ',';
          append_quoted(out, c->items[j]);
        }
        out += ']';
      } else {
        append_tensor_data(out, t);
      }
      out += ',';
    }
    out += "\"datatype\":";
    append_quoted(out, c ? "BYTES" : triton_dtype(t.dtype()));
    out += ",\"name\":";
    append_quoted(out, wanted[i].name);
    if (wanted[i].binary) {
      if (c) class_bytes[i] = bytes_contents(c->items);
      out += ",\"parameters\":{\"binary_data_size\":" + std::to_string(c ? class_bytes[i].size() : t.nbytes()) + "}";
    }
    const Dims& dims = c ? c->dims : t.dims();
    out += ",\"shape\":[";
    for (size_t d = 0; d < dims.size(); ++d) out.append(d ? "," : "").append(std::to_string(dims[d]));
    out += "]}";
  }
  out += "]}";
  if (std::any_of(wanted.begin(), wanted.end(), [](const auto& w) { return w.binary; })) {
    b.header_length = out.size();
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (!wanted[i].binary) continue;
      if (classes[i]) out += class_bytes[i];
      else out.append(static_cast<const char*>(tensors[i]->raw()), tensors[i]->nbytes());
    }
  }
  return b;
}

}  // namespace fusor::serve
