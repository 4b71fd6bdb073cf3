#include "profile/generation_profile.h"

#include <cstdio>

namespace fusor {
namespace {

std::string formatted(const char* format, auto... args) {
  char line[512];
  std::snprintf(line, sizeof line, format, args...);
  return line;
}

void render_kind(std::string& out, const char* what, const StepKindProfile& k, size_t top) {
  if (k.steps == 0) {
    out += formatted("%s steps: none\n", what);
    return;
  }
  double kernels = 0;
  for (const KernelTime& t : k.kernels) kernels += t.seconds;
  out += formatted("%s steps: %lld runs, %lld tokens, %.3f s (%.3f ms a run); kernels %.1f%% of it\n", what,
                   static_cast<long long>(k.steps), static_cast<long long>(k.tokens), k.seconds,
                   1e3 * k.seconds / static_cast<double>(k.steps), k.seconds > 0 ? 100 * kernels / k.seconds : 0.0);
  out += formatted("  %10s %6s %8s %10s  %s\n", "ms", "share", "calls", "us/call", "kernel (op)");
  double rest = 0;
  size_t rest_count = 0;
  for (size_t i = 0; i < k.kernels.size(); ++i) {
    const KernelTime& t = k.kernels[i];
    if (i >= top) {
      rest += t.seconds;
      ++rest_count;
      continue;
    }
    out += formatted("  %10.3f %5.1f%% %8lld %10.1f  %s (%s)\n", 1e3 * t.seconds,
                     k.seconds > 0 ? 100 * t.seconds / k.seconds : 0.0, static_cast<long long>(t.calls),
                     t.calls ? 1e6 * t.seconds / static_cast<double>(t.calls) : 0.0, t.kernel.c_str(), t.op.c_str());
  }
  if (rest_count)
    out += formatted("  %10.3f %5.1f%% %8s %10s  (%zu more kernels)\n", 1e3 * rest,
                     k.seconds > 0 ? 100 * rest / k.seconds : 0.0, "", "", rest_count);
}

}  // namespace

std::string render_generation_profile(const GenerationProfile& profile, size_t top) {
  std::string out;
  render_kind(out, "decode", profile.decode, top);
  render_kind(out, "prompt", profile.prompt, top);
  return out;
}

}  // namespace fusor
