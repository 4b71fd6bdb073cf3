// check_model_names: a name HTTP cannot route to one model is refused before anything is served.
#include <gtest/gtest.h>

#include "fusor/error.h"
#include "fusor/serve.h"

namespace fusor::serve {
namespace {

std::string refusal(const std::vector<std::string>& names) {
  try {
    check_model_names(names);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelNames, RoutableNamesPass) { EXPECT_EQ(refusal({"bert", "we\"ird\\name", "v1.2", "a b"}), ""); }

TEST(ModelNames, UnroutableNamesAreRefused) {
  EXPECT_EQ(refusal({""}), "model name '' is empty");
  EXPECT_EQ(refusal({"a/b"}), "model name 'a/b' contains '/', which /v2/models/NAME/... cannot route");
  EXPECT_EQ(refusal({"stats"}), "model name 'stats' is reserved: GET /v2/models/stats answers every model's statistics");
  EXPECT_EQ(refusal({"."}), "model name '.' is a path step, which clients resolve away");
  EXPECT_EQ(refusal({"a\nb"}), "model name 'a\\x0ab' contains a control character");
}

TEST(ModelNames, ANameGivenTwiceIsRefused) {
  EXPECT_EQ(refusal({"a", "b", "a"}), "model name 'a' is given twice; each model needs its own");
}

}  // namespace
}  // namespace fusor::serve
