// Text generation with a decoder export (include/fusor/generate.h), as fusor generate --json: the
// result as a dict with the CLI's fields. The decoder loop runs with the GIL released, taking it
// back between tokens only to let Ctrl-C through.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include <pybind11/stl.h>

#include "bindings.h"
#include "fusor/decoder.h"
#include "fusor/generate.h"

namespace fusor::python {

namespace {

struct GenerateArgs {
  std::optional<std::string> prompt;
  std::optional<std::vector<TokenId>> prompt_ids;
  std::string tokenizer;  // a path; "" for the model folder's tokenizer.json, if any
  GenerateOptions options;                      // its sampling from `knobs` and the model's defaults
  std::optional<std::vector<TokenId>> eos_ids;  // replaces the model configs' EOS ids
  SamplingKnobs knobs;
  uint64_t seed = 0;
};

// As fusor generate: the given tokenizer, else the model folder's; none is fine for token ids
// without stop strings.
std::optional<Tokenizer> tokenizer_for(const GenerateArgs& a, const DecoderSpec& spec) {
  if (!a.tokenizer.empty()) return Tokenizer::load(a.tokenizer);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(spec.folder) / "tokenizer.json", ec)) return Tokenizer::load(spec.folder);
  if (a.prompt || !a.options.stop.empty())
    throw Error("no tokenizer.json in " + spec.folder + ": give one with tokenizer=", ErrorKind::InvalidArgument);
  return std::nullopt;
}

// The per-token callback: Python's signal handlers run at most every 50 ms (the GIL is taken only
// then); one that raises (KeyboardInterrupt on Ctrl-C) ends generation with its exception, which
// otherwise would wait for the last token.
TokenCallback signal_check() {
  using Clock = std::chrono::steady_clock;
  return [last = Clock::now()](TokenId, std::string_view) mutable {
    if (Clock::now() - last < std::chrono::milliseconds(50)) return;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    last = Clock::now();
  };
}

py::dict generate_text(const Engine& engine, const std::string& model_file, GenerateArgs a,
                       const SessionOptions& options) {
  const DecoderSpec spec = DecoderSpec::describe(engine, model_file);
  const std::optional<Tokenizer> tokenizer = tokenizer_for(a, spec);
  a.options.eos_ids = a.eos_ids ? *a.eos_ids : spec.eos_ids;
  a.options.sampling = sampling_with_defaults(a.knobs, spec.generation_defaults, a.seed);
  a.options.sampling.validate();
  const std::vector<TokenId> prompt = a.prompt ? tokenizer->encode(*a.prompt) : *a.prompt_ids;
  if (prompt.empty()) throw Error("the prompt encodes to no tokens", ErrorKind::InvalidArgument);
  GenerateResult r;
  {
    py::gil_scoped_release release;
    DecoderStep decoder(engine, spec, options);
    r = generate(decoder, prompt, a.options, tokenizer ? &*tokenizer : nullptr, signal_check());
  }
  auto finite = [](double v) { return std::isfinite(v) ? v : 0.0; };
  return py::dict(py::arg("prompt_ids") = prompt, py::arg("output_ids") = r.output_ids, py::arg("text") = r.text,
                  py::arg("finish_reason") = finish_reason_name(r.finish_reason),
                  py::arg("ttft_ms") = finite(r.ttft_ms), py::arg("tokens_per_s") = finite(r.tokens_per_s));
}

}  // namespace

void bind_generate(py::module_& m) {
  m.def("decoder_model_file", &DecoderSpec::model_file_of, py::arg("path"));
  m.def(
      "generate",
      [](const Engine& engine, const std::string& model_file, std::optional<std::string> prompt,
         std::optional<std::vector<TokenId>> prompt_ids, int64_t max_new_tokens, std::optional<double> temperature,
         std::optional<int64_t> top_k, std::optional<double> top_p, std::optional<double> repetition_penalty,
         uint64_t seed, std::vector<std::string> stop,
         bool ignore_eos, std::optional<std::vector<TokenId>> eos_ids, const SessionOptions& options,
         std::string tokenizer) {
        GenerateArgs a{std::move(prompt), std::move(prompt_ids), std::move(tokenizer), {}, std::move(eos_ids)};
        a.options.max_new_tokens = max_new_tokens;
        a.options.ignore_eos = ignore_eos;
        a.options.stop = std::move(stop);
        a.knobs = {.temperature = temperature, .top_p = top_p, .repetition_penalty = repetition_penalty, .top_k = top_k};
        a.seed = seed;
        return generate_text(engine, model_file, std::move(a), options);
      },
      py::arg("engine"), py::arg("model_file"), py::arg("prompt"), py::arg("prompt_ids"), py::arg("max_new_tokens"),
      py::arg("temperature"), py::arg("top_k"), py::arg("top_p"),
      py::arg("repetition_penalty"), py::arg("seed"), py::arg("stop"), py::arg("ignore_eos"), py::arg("eos_ids"),
      py::arg("options"), py::arg("tokenizer"));
}

}  // namespace fusor::python
