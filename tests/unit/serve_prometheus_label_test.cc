// prometheus_label: a label value is escaped as the text format requires, whatever a user named
// the model or traffic class.
#include <gtest/gtest.h>

#include "serve/prometheus_label.h"

namespace fusor::serve {
namespace {

TEST(PrometheusLabel, PlainValueIsQuoted) { EXPECT_EQ(prometheus_label("model", "bert"), "model=\"bert\""); }

TEST(PrometheusLabel, BackslashQuoteAndNewlineAreEscaped) {
  EXPECT_EQ(prometheus_label("model", "we\"ird\\name\n"), R"(model="we\"ird\\name\n")");
}

}  // namespace
}  // namespace fusor::serve
