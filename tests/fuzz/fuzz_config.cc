// libFuzzer target: arbitrary bytes as a config file (`--config`, and the serve section that
// `fusor tune` writes). Text that parses must round-trip: config_yaml writes it back as YAML
// that parses to an equal Config. Any exception other than fusor::Error, a round trip that
// differs, any crash, hang or sanitizer report is a bug.
//   cmake --build build-asan --target fuzz_config && build-asan/tests/fuzz/fuzz_config -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fusor/config.h"
#include "fusor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fusor::Config config;
  try {
    config = fusor::parse_config(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>");
  } catch (const fusor::Error&) {
    return 0;
  }
  const std::string written = fusor::config_yaml(config);
  if (fusor::parse_config(written, "<written>") != config) {
    std::fprintf(stderr, "config_yaml did not round-trip; it wrote:\n%s\n", written.c_str());
    std::abort();
  }
  return 0;
}
