// Compressed HTTP request bodies are inflated by fusor under serve.max_body_bytes, which httplib
// applied to the compressed size only (a 407 KB gzip body inflated to 400 MiB).
#include "serve/request_body.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <zlib.h>

#include "serve/status.h"

namespace fusor::serve {
namespace {

// `text` compressed: gzip (window bits 31) or zlib (15).
std::string compressed(const std::string& text, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

httplib::Request sent(const std::string& body, const std::string& encoding) {
  httplib::Request req;
  req.body = body;
  if (!encoding.empty()) req.headers.emplace("Content-Encoding", encoding);
  defer_content_encoding(req);
  EXPECT_FALSE(req.has_header("Content-Encoding")) << "httplib would inflate it, unbounded";
  return req;
}

std::string refusal(const httplib::Request& req, int64_t limit) {
  try {
    inflate_body(req, limit);
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code, Code::BadRequest);
    return e.message;
  }
  return "";
}

TEST(RequestBody, GzipAndDeflateBodiesAreInflated) {
  const std::string json = R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})";
  for (auto [encoding, bits] : {std::pair{"gzip", 31}, {"GZIP", 31}, {"deflate", 15}}) {
    httplib::Request req = sent(compressed(json, bits), encoding);
    inflate_body(req, 1 << 20);
    EXPECT_EQ(req.body, json) << encoding;
  }
  httplib::Request plain = sent(json, "");
  inflate_body(plain, 1 << 20);
  EXPECT_EQ(plain.body, json);
  httplib::Request identity = sent(json, "identity");
  inflate_body(identity, 1 << 20);
  EXPECT_EQ(identity.body, json);
}

TEST(RequestBody, TheLimitBoundsTheInflatedSize) {
  const std::string zeros(1 << 20, '0');  // 1 MiB that compresses to about 1 KB
  const httplib::Request bomb = sent(compressed(zeros, 31), "gzip");
  ASSERT_LT(bomb.body.size(), 4096u);
  EXPECT_NE(refusal(bomb, 64 << 10).find("exceeds the limit of 65536 bytes once inflated"), std::string::npos);
  httplib::Request fits = sent(compressed(zeros, 31), "gzip");
  inflate_body(fits, 1 << 20);
  EXPECT_EQ(fits.body.size(), zeros.size());
}

TEST(RequestBody, CorruptCutShortAndUnknownEncodingsAreRefused) {
  std::string gz = compressed(std::string(5000, 'a') + "b", 31);
  EXPECT_NE(refusal(sent("not gzip at all", "gzip"), 1 << 20).find("not valid gzip"), std::string::npos);
  EXPECT_NE(refusal(sent(gz.substr(0, gz.size() / 2), "gzip"), 1 << 20).find("cut short"), std::string::npos);
  EXPECT_NE(refusal(sent("{}", "br"), 1 << 20).find("Content-Encoding 'br' is not supported"), std::string::npos);
}

}  // namespace
}  // namespace fusor::serve
