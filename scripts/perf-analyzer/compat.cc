// Debian 12 compat shim for the PyPI perf_analyzer binary (built against glibc 2.38 / GCC 13).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ios>

extern "C" {
long __isoc23_strtol(const char* s, char** e, int b) { return strtol(s, e, b); }
unsigned long __isoc23_strtoul(const char* s, char** e, int b) { return strtoul(s, e, b); }
long long __isoc23_strtoll(const char* s, char** e, int b) { return strtoll(s, e, b); }
unsigned long long __isoc23_strtoull(const char* s, char** e, int b) { return strtoull(s, e, b); }
int __isoc23_sscanf(const char* s, const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  int n = vsscanf(s, f, ap);
  va_end(ap);
  return n;
}
// std::ios_base_library_init(): GCC 13 moved the iostream init into the library.
void _ZSt21ios_base_library_initv() {}
}
// GCC 13 constructs the standard streams inside libstdc++; Debian 12s GCC 12 expects each user.
static std::ios_base::Init streams;
extern "C" {
// std::string::_M_replace_cold(p, len1, s, len2, how_much), GCC 13's basic_string.tcc.
void _ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE15_M_replace_coldEPcmPKcmm(
    void*, char* p, size_t len1, const char* s, size_t len2, size_t how_much) {
  if (len2 && len2 <= len1) memmove(p, s, len2);
  if (how_much && len1 != len2) memmove(p + len2, p + len1, how_much);
  if (len2 > len1) {
    if (s + len2 <= p + len1) memmove(p, s, len2);
    else if (s >= p + len1) memcpy(p, p + (s - p) + (len2 - len1), len2);
    else {
      size_t left = (p + len1) - s;
      memmove(p, s, left);
      memcpy(p + left, p + len2, len2 - left);
    }
  }
}
}
