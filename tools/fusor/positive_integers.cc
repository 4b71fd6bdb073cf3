#include "commands.h"
#include "model_args.h"

namespace fusor::cli {

CLI::Validator positive_integers(Count count) {
  return CLI::Validator(
      [count](std::string& text) -> std::string {
        if (text.empty() && count == Count::ListOrNone) return "";
        auto values = positive_integers_in(text);
        if (count == Count::One && (!values || values->size() != 1)) return "'" + text + "' must be a positive integer";
        if (!values) return "'" + text + "' must be a comma-separated list of positive integers";
        return "";
      },
      count == Count::One ? "" : "INT,...");  // One: the option already says INT:POSITIVE
}

}  // namespace fusor::cli
