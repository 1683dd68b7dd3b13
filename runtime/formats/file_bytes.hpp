// Whole-file and file-prefix reads for the hosted tools layer (config.json, GGUF headers). Runs
// once at init, never on a prefill/decode path, so a std::vector is fine here. Errors name the
// path as the caller gave it and the system's reason ("cannot open config.json: No such file or
// directory").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "headway/status.hpp"

namespace headway::formats {

struct FileBytes {
  std::vector<uint8_t> bytes;  // the bytes read: the whole file, or its first part
  uint64_t file_size = 0;      // the size of the whole file
};

// Reads all of `path`. A file larger than `max_bytes` is an error (kInvalidArgument) that says
// both sizes; `what` names the kind of file in that message ("a config.json").
Result<FileBytes> read_file(const char* path, size_t max_bytes, const char* what);

// Reads the first min(`prefix_bytes`, file size) bytes of `path`: for formats whose header is
// small but whose body is gigabytes (GGUF).
Result<FileBytes> read_file_prefix(const char* path, size_t prefix_bytes);

}  // namespace headway::formats
