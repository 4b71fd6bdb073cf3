#include "io/atomic_file.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace fusor {

bool write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Hidden and per process, so that two writers never share one and a listing skips it.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmp" + std::to_string(::getpid());
  const fs::path tmp = path.parent_path() / name;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f || !f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !f.flush()) {
      f.close();
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, path, ec);
  if (!ec) return true;
  fs::remove(tmp, ec);  // (clears ec)
  return false;
}

}  // namespace fusor
