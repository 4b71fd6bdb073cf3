// vLLM's sampling settings that fusor does not implement, refused alike on every generation
// protocol that takes them (OpenAI's /v1, Triton's generate and its vLLM backend's
// sampling_parameters): a client moving from vLLM would otherwise get unconstrained or greedy
// text with a 200, without a word.
#pragma once
#include <string>

#include "serve/request_fields.h"

namespace fusor::serve {

// A FieldError (400) naming the setting: "'n' other than 1 is not supported by this server".
[[noreturn]] void not_implemented(const std::string& param, const std::string& what);

// Refuses each setting that asks for something fusor does not do; a setting at its default (a
// client sending defaults explicitly) passes.
void refuse_unsupported_sampling(const RequestFields& f);

}  // namespace fusor::serve
