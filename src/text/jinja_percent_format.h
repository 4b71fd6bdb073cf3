// Python's printf-style formatting, `'%s: %d' % (a, b)` and jinja2's `format` filter over it:
// the conversions s, r, a, d, i, u, f, F, e, E, g, G, x, X, o, c and %%, with flags, width and
// precision (also `*`), and `%(name)s` keys read from a dict.
#pragma once
#include <string>

#include "text/jinja_value.h"

namespace fusor::text::jinja {

// `format % values`: `values` is a tuple of the arguments, a dict for %(name)s keys, or one
// value. Throws EvalError as Python's TypeError and ValueError would.
std::string percent_format(const std::string& format, const Value& values);

}  // namespace fusor::text::jinja
