// Cache tensor names per layer, from printf-style templates with one %d ("present.%d.key"), as
// Optimum names them and ONNX Runtime GenAI's genai_config.json writes them.
#pragma once
#include <string>

namespace fusor {

// Throws InvalidModel (naming `where`) unless `name_template` holds exactly one "%d" and no
// other '%'.
void check_name_template(const std::string& name_template, const std::string& where);
// The template with its %d replaced by `layer`.
std::string format_name(const std::string& name_template, int layer);

}  // namespace fusor
