// The saved precision verdict (include/fusor/check.h): found again for the same model bytes and
// config, trusted by the files' sizes, mtimes and ctimes while those stand, looked up by content once
// they move, following the weights into external data files, and a damaged verdict file is
// ignored rather than fatal.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "fusor/check.h"
#include "fusor/config.h"
#include "onnx/external_data.h"

namespace fusor {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

nlohmann::json read(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

class SavedVerdict : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fusor-verdict-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ::setenv("FUSOR_CACHE_DIR", (dir_ / "cache").c_str(), 1);  // no stray file from elsewhere
    model_ = (dir_ / "model.onnx").string();
    write(model_, "the model's bytes, version one");
  }
  void TearDown() override {
    ::unsetenv("FUSOR_CACHE_DIR");
    fs::remove_all(dir_);
  }
  fs::path dir_;
  std::string model_;
};

TEST_F(SavedVerdict, IsFoundByStampThenByContent) {
  const FusionConfig fusion;
  const std::string key = verdict_config_key(fusion);
  const std::string saved = save_verdict(model_, {model_file_hash(model_), key, true, {"ln_0"}});
  EXPECT_EQ(saved, model_ + ".fusor-verdicts.json");
  EXPECT_EQ(read(saved)["model_stamp"]["size"], 30);

  std::optional<Verdict> v = load_verdict(model_, fusion);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->rolled_back, std::vector<std::string>{"ln_0"});
  FusionConfig other = fusion;
  other.fuse_attention = false;
  EXPECT_FALSE(load_verdict(model_, other));  // another config has no verdict yet

  // Rewritten with its size and mtime put back (cp -p, rsync -t): the saved hash was trusted, and
  // version one's verdict vouched for version two. Its ctime moved, so the bytes are hashed.
  const auto mtime = fs::last_write_time(model_);
  write(model_, "the model's bytes, version two");
  fs::last_write_time(model_, mtime);
  EXPECT_FALSE(load_verdict(model_, fusion));
  // Back to version one's bytes: the content matches again, and the file keeps the new stamp
  // (the quick check of the next load, which then reads no bytes).
  write(model_, "the model's bytes, version one");
  EXPECT_TRUE(load_verdict(model_, fusion));
  struct stat st {};
  ASSERT_EQ(::stat(model_.c_str(), &st), 0);
  EXPECT_EQ(read(saved)["model_stamp"]["ctime_ns"].get<int64_t>(),
            static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec);
  EXPECT_TRUE(load_verdict(model_, fusion));
}

// A check on stronger samples rolled an item back; a later check on generated samples, which
// never show the problem, passed it and replaced the verdict: the item fused again.
TEST_F(SavedVerdict, IsNotSavedForAModelReplacedWhileItWasChecked) {
  // check hashes the model before it loads it; the file replaced by another of the same size was
  // stamped and hashed when the check ended, so the old model's verdict vouched for the new one.
  const std::string checked = model_file_hash(model_);
  write(model_, "the model's bytes, version two");
  try {
    save_verdict(model_, {checked, verdict_config_key(FusionConfig{}), true, {}});
    FAIL() << "saved";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed while it was checked"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(model_ + ".fusor-verdicts.json"));
}

TEST_F(SavedVerdict, ALaterCheckKeepsTheSavedRollbacks) {
  const FusionConfig fusion;
  const std::string key = verdict_config_key(fusion), hash = model_file_hash(model_);
  save_verdict(model_, {hash, key, true, {"layernorm"}, "samples s_offset"});
  std::vector<std::string> kept;
  std::string from;
  Verdict merged = keep_saved_rollbacks(model_, {hash, key, true, {"gelu"}, "generated samples"}, kept, from);
  EXPECT_EQ(merged.rolled_back, (std::vector<std::string>{"gelu", "layernorm"}));
  EXPECT_EQ(kept, std::vector<std::string>{"layernorm"});
  EXPECT_EQ(from, "samples s_offset");
  save_verdict(model_, merged);
  EXPECT_EQ(load_verdict(model_, fusion)->rolled_back, merged.rolled_back);

  FusionConfig other = fusion;  // another config's verdict is its own
  other.fuse_attention = false;
  keep_saved_rollbacks(model_, {hash, verdict_config_key(other), true, {}, ""}, kept, from);
  EXPECT_TRUE(kept.empty());
}

TEST_F(SavedVerdict, ADamagedFileIsIgnored) {
  const FusionConfig fusion;
  const std::string key = verdict_config_key(fusion);
  for (const char* damaged : {R"({"model_hash": 7, "verdicts": {}})", R"(["not", "an", "object"])", "{ not json",
                              R"({"model_hash": "x", "model_stamp": 3, "verdicts": {"KEY": {"passed": "yes"}}})"}) {
    std::string text = damaged;
    if (auto at = text.find("KEY"); at != std::string::npos) text.replace(at, 3, key);
    write(model_ + ".fusor-verdicts.json", text);
    EXPECT_FALSE(load_verdict(model_, fusion)) << damaged;
  }
  // Saving over a damaged file replaces it.
  for (const char* damaged : {R"({"model_hash": 7, "verdicts": {}})", R"({"verdicts": []})", "{ not json"}) {
    write(model_ + ".fusor-verdicts.json", damaged);
    save_verdict(model_, {model_file_hash(model_), key, true, {}});
    EXPECT_TRUE(load_verdict(model_, fusion)) << damaged;
  }
  EXPECT_FALSE(fs::exists(model_ + ".fusor-verdicts.json.tmp" + std::to_string(::getpid())));
}

// Weights in an external data file: new weights under the same graph file are another model.
TEST_F(SavedVerdict, FollowsTheWeightsIntoExternalData) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::TensorProto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  {
    std::ofstream f(model_, std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(m.SerializeToOstream(&f));
  }
  write(dir_ / "weights.bin", "12345678");
  EXPECT_EQ(external_data_files(model_), std::vector<std::string>{"weights.bin"});
  EXPECT_TRUE(external_data_files((dir_ / "missing.onnx").string()).empty());

  const FusionConfig fusion;
  const std::string before = model_file_hash(model_);
  save_verdict(model_, {before, verdict_config_key(fusion), true, {}});
  EXPECT_EQ(read(model_ + ".fusor-verdicts.json")["model_stamp"]["external"][0]["file"], "weights.bin");
  EXPECT_TRUE(load_verdict(model_, fusion));
  write(dir_ / "weights.bin", "87654321");  // fine-tuned weights, same shapes, same graph file
  EXPECT_NE(model_file_hash(model_), before);
  EXPECT_FALSE(load_verdict(model_, fusion));
}

}  // namespace
}  // namespace fusor
