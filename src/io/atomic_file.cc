#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>
#include <string>

namespace fusor {
namespace {

// A new temporary file beside `path`, created here and now: O_EXCL refuses a name that exists,
// a symlink included, so a name planted in a shared folder (the old one was predictable: the
// target's name and the pid) cannot redirect the write to another file. -1 when none could be
// made. Hidden, so that a listing skips it.
int create_temporary(const std::filesystem::path& path, std::filesystem::path& tmp) {
  std::random_device entropy;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp%08x%08x", entropy(), entropy());
    // At most 200 bytes of the name: with the dot and the suffix a 250-byte name went past the
    // file system's 255.
    tmp = path.parent_path() / ("." + path.filename().string().substr(0, 200) + suffix);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

bool write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  return write_file_atomically(path, {bytes});
}

bool write_file_atomically(const std::filesystem::path& path, std::initializer_list<std::string_view> pieces) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) return false;
  fs::path tmp;
  const int fd = create_temporary(path, tmp);
  if (fd < 0) return false;
  bool written = true;
  for (std::string_view piece : pieces) written = written && write_all(fd, piece);
  if (::close(fd) != 0 || !written) {
    fs::remove(tmp, ec);
    return false;
  }
  fs::rename(tmp, path, ec);
  if (!ec) return true;
  fs::remove(tmp, ec);  // (clears ec)
  return false;
}

}  // namespace fusor
