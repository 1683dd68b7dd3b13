#include "runtime/formats/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace headway::formats {

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    close();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { close(); }

void MappedFile::close() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
  data_ = nullptr;
  size_ = 0;
  path_.clear();
}

Status MappedFile::open(const char* path) {
  close();
  if (!path || !*path) return Status::error(Code::kInvalidArgument, "no file name given");
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status::error(err == ENOENT || err == ENOTDIR ? Code::kNotFound : Code::kInvalidArgument,
                         "cannot open %s: %s", path, std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::error(Code::kInvalidArgument, "cannot stat %s: %s", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(Code::kInvalidArgument, "cannot map %s: %s", path,
                         S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > SIZE_MAX) {
    ::close(fd);
    return Status::error(Code::kUnsupported, "cannot map %s: %llu bytes is more than this machine's address space",
                         path, static_cast<unsigned long long>(size));
  }
  void* p = nullptr;
  if (size > 0) {  // mmap of 0 bytes is EINVAL; an empty file maps to nothing
    p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::error(Code::kInvalidArgument, "cannot map %s (%llu bytes): %s", path,
                           static_cast<unsigned long long>(size), std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps the file's pages
  data_ = static_cast<const uint8_t*>(p);
  size_ = size;
  path_ = path;
  return Status();
}

}  // namespace headway::formats
