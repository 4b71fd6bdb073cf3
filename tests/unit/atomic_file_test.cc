#include "io/atomic_file.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace fusor {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(AtomicFile, ReplacesAFileWholeAndLeavesNothingElse) {
  const fs::path dir = fresh_folder("atomic_file_whole");
  const fs::path p = dir / "model.onnx";
  ASSERT_TRUE(write_file_atomically(p, "old and longer"));
  ASSERT_TRUE(write_file_atomically(p, "new"));
  EXPECT_EQ(read(p), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, AFailedWriteLeavesWhatWasThere) {
  const fs::path dir = fresh_folder("atomic_file_failed");
  fs::create_directories(dir / "taken" / "inside");  // a folder in the way: the rename fails
  EXPECT_FALSE(write_file_atomically(dir / "taken", "bytes"));
  EXPECT_TRUE(fs::is_directory(dir / "taken" / "inside"));
  EXPECT_FALSE(write_file_atomically(dir / "missing" / "model.onnx", "bytes"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temporary left
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusor
