// Writing a file whole or not at all: the bytes go to a temporary file in the same folder, which
// is then renamed over the target. A reader in another process (serve starting while check
// saves a verdict) sees the old file or the new one, and an interrupted writer (Ctrl-C during
// `fusor optimize -o model.onnx`, the model's own path) leaves the old file as it was.
#pragma once
#include <filesystem>
#include <initializer_list>
#include <string_view>

namespace fusor {

// False when the file could not be written (the temporary file is then removed), and when `path`
// is there but is not a regular file: renamed over, a device (/dev/null, as root), a FIFO or a
// socket became a plain file holding the bytes.
bool write_file_atomically(const std::filesystem::path& path, std::string_view bytes);
// The same for a file of several pieces written one after the other (a header and a tensor's
// bytes, without copying the tensor into one string).
bool write_file_atomically(const std::filesystem::path& path, std::initializer_list<std::string_view> pieces);

}  // namespace fusor
