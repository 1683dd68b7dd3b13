// A whole file mapped read-only (POSIX mmap): model weights are read where they lie, never
// copied. Part of the hosted tools layer. The pages stay valid while the MappedFile lives; a
// moved-from MappedFile is empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "headway/status.hpp"

namespace headway::formats {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  // Maps all of `path` (a regular file), replacing what was mapped before. An empty file maps
  // to size() 0 and data() nullptr. Errors name the path and the system's reason.
  Status open(const char* path);
  void close();

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const char* path() const { return path_.c_str(); }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
};

}  // namespace headway::formats
