// HTTP request bodies sent compressed (Content-Encoding: gzip or deflate), inflated by fusor with
// serve.max_body_bytes bounding the inflated size. httplib 0.11 inflates them itself and bounds
// only the compressed size: a 407 KB gzip body inflated to 400 MiB, and one under the 64 MiB
// limit could inflate to tens of gigabytes (a decompression bomb).
#pragma once
#include <cstdint>

namespace httplib {
struct Request;
}

namespace fusor::serve {

// From the pre-routing handler, before the body is read: moves the request's Content-Encoding
// aside, so that httplib keeps the body as it was sent.
void defer_content_encoding(httplib::Request& req);

// Inflates, in place, a body whose encoding was deferred. Throws RequestError (400) when the
// inflated body would pass `limit` bytes, for a corrupt stream, or for an encoding other than
// gzip, deflate (zlib) or identity.
void inflate_body(const httplib::Request& req, int64_t limit);

}  // namespace fusor::serve
