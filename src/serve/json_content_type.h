// The Content-Type of every JSON answer the HTTP server gives.
#pragma once

namespace fusor::serve {

// The charset parameter keeps compression off: cpp-httplib (Debian's build, with brotli)
// compresses an answer whose type is exactly "application/json" for any client that accepts it,
// brotli at quality 11 (2.75 s of CPU for a 1.2 MB infer answer, against 67 ms uncompressed) or
// gzip (157 ms). Python's requests asks for both. On the networks a server answers over, the CPU
// costs more than the bytes.
inline constexpr const char* kJsonContentType = "application/json; charset=utf-8";

}  // namespace fusor::serve
