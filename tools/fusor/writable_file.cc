#include <filesystem>

#include "commands.h"

namespace fusor::cli {

CLI::Validator writable_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (fs::is_directory(path, ec)) return "'" + path + "' is a folder, not a file";
        const fs::path parent = fs::path(path).parent_path();
        if (!parent.empty() && !fs::is_directory(parent, ec)) return "folder " + parent.string() + " does not exist";
        return "";
      },
      "FILE");
}

}  // namespace fusor::cli
