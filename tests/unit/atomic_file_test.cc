#include "io/atomic_file.h"
#include "io/json_depth.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

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

TEST(AtomicFile, PiecesAreWrittenInOrderAndNotOverADevice) {
  const fs::path dir = fresh_folder("atomic_file_pieces");
  ASSERT_TRUE(write_file_atomically(dir / "a.npy", {"head", std::string_view("\0body", 5), ""}));
  EXPECT_EQ(read(dir / "a.npy"), std::string("head\0body", 9));
  // Renamed over, /dev/null became a plain file (as root); a FIFO stands in for it.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_FALSE(write_file_atomically(dir / "fifo", "bytes"));
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);  // no temporary left
  fs::remove_all(dir);
}

// A hostile model folder planted a symlink where the temporary file would go (its name was the
// target's and the pid): `fusor check` then wrote its verdicts into the file the link named.
TEST(AtomicFile, APlantedSymlinkIsNotFollowed) {
  const fs::path dir = fresh_folder("atomic_file_symlink");
  const fs::path victim = dir / "victim";
  { std::ofstream(victim) << "precious"; }
  const fs::path p = dir / "model.onnx.fusor-verdicts.json";
  fs::create_symlink(victim, dir / (".model.onnx.fusor-verdicts.json.tmp" + std::to_string(::getpid())));
  ASSERT_TRUE(write_file_atomically(p, "verdicts"));
  EXPECT_EQ(read(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(p));
  EXPECT_EQ(read(p), "verdicts");
  fs::remove_all(dir);
}

TEST(JsonDepth, CountsBracketsOutsideStrings) {
  EXPECT_TRUE(json_depth_within(R"({"a": [[1], {"b": 2}]})", 3));
  EXPECT_FALSE(json_depth_within(R"({"a": [[1], {"b": 2}]})", 2));
  EXPECT_TRUE(json_depth_within(R"(["[[[[", "\"[[[["])", 1));  // in strings, escaped quotes too
  EXPECT_FALSE(json_depth_within(std::string(200000, '[') + std::string(200000, ']')));
  EXPECT_TRUE(json_depth_within("not json {"));  // the parser judges validity
}

}  // namespace
}  // namespace fusor
