#include "serve/request_body.h"

#include <httplib.h>
#include <zlib.h>

#include <cctype>
#include <string>

#include "serve/status.h"

namespace fusor::serve {
namespace {

constexpr const char* kDeferred = "X-Fusor-Content-Encoding";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// gzip or zlib (deflate) data inflated, at most `limit` bytes of it.
std::string inflated(const std::string& in, int64_t limit) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw RequestError{Code::Internal, "cannot start inflating the body"};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {  // Z_BUF_ERROR: the input ended before the stream
      inflateEnd(&z);
      throw RequestError{Code::BadRequest, rc == Z_BUF_ERROR ? "the request body's gzip or deflate data is cut short"
                                                              : "the request body is not valid gzip or deflate data"};
    }
    const size_t produced = sizeof chunk - z.avail_out;
    if (static_cast<int64_t>(out.size() + produced) > limit) {
      inflateEnd(&z);
      throw RequestError{Code::BadRequest, "request body exceeds the limit of " + std::to_string(limit) +
                                               " bytes once inflated (serve.max_body_bytes)"};
    }
    out.append(chunk, produced);
  }
  inflateEnd(&z);
  return out;
}

}  // namespace

void defer_content_encoding(httplib::Request& req) {
  auto it = req.headers.find("Content-Encoding");
  if (it == req.headers.end()) return;
  std::string encoding = it->second;
  req.headers.erase(it);
  req.headers.emplace(kDeferred, std::move(encoding));
}

void inflate_body(const httplib::Request& req, int64_t limit) {
  if (!req.has_header(kDeferred)) return;
  const std::string encoding = lower(req.get_header_value(kDeferred));
  auto& request = const_cast<httplib::Request&>(req);  // httplib hands handlers a const request
  request.headers.erase(kDeferred);
  if (encoding.empty() || encoding == "identity") return;
  if (encoding != "gzip" && encoding != "x-gzip" && encoding != "deflate")
    throw RequestError{Code::BadRequest, "Content-Encoding '" + encoding + "' is not supported (gzip, deflate or identity)"};
  request.body = inflated(req.body, limit);
}

}  // namespace fusor::serve
