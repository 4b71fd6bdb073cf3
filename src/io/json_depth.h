// How deeply a JSON text nests its arrays and objects, read without parsing it.
//
// Why: nlohmann::json parses iteratively, but copying, comparing and dumping a value recurse once
// per level, so a 400 KB body of 200,000 nested brackets parsed fine and then overflowed the
// stack of the thread that copied it (a request killed `fusor serve`). Readers of untrusted JSON
// (request bodies, a model folder's tokenizer and configs) check the depth first; real documents
// nest a handful of levels.
#pragma once
#include <string_view>

namespace fusor {

inline constexpr int kMaxJsonDepth = 128;

// True when no array or object in `text` sits deeper than `limit` levels. Brackets inside
// strings do not count; the text need not be valid JSON (the parser judges that).
bool json_depth_within(std::string_view text, int limit = kMaxJsonDepth);

}  // namespace fusor
