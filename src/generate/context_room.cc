// The one rule for how a context is shared between a prompt and what is generated after it.
#include <limits>
#include <string>

#include "fusor/error.h"
#include "fusor/generate.h"

namespace fusor {

int64_t context_room(int64_t prompt_tokens, int64_t context_length) {
  if (context_length <= 0) return std::numeric_limits<int64_t>::max();
  return prompt_tokens < context_length ? context_length - prompt_tokens : 0;
}

void check_prompt_fits(int64_t prompt_tokens, int64_t context_length) {
  if (context_room(prompt_tokens, context_length) == 0)
    throw Error("the prompt has " + std::to_string(prompt_tokens) +
                    " tokens, which leaves no room to generate in the model's context length of " +
                    std::to_string(context_length),
                ErrorKind::InvalidArgument);
}

}  // namespace fusor
