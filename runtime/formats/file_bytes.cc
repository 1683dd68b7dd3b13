#include "runtime/formats/file_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace headway::formats {
namespace {

Code code_for_errno(int err) { return err == ENOENT || err == ENOTDIR ? Code::kNotFound : Code::kInvalidArgument; }

// Owns one descriptor; closes it on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens `path` read-only and checks that it is a regular file; *size gets its length.
Status open_regular(const char* path, Fd* fd, uint64_t* size) {
  if (fd->get() < 0) {
    const int err = errno;
    return Status::error(code_for_errno(err), "cannot open %s: %s", path, std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) {
    const int err = errno;
    return Status::error(Code::kInvalidArgument, "cannot stat %s: %s", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::error(Code::kInvalidArgument, "cannot read %s: %s", path,
                         S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
  }
  *size = static_cast<uint64_t>(st.st_size);
  return Status();
}

// Reads exactly `n` bytes into `out`, retrying short reads and EINTR.
Status read_exactly(const char* path, int fd, uint8_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, out + done, n - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return Status::error(Code::kDataLoss, "cannot read %s: %s", path, std::strerror(err));
    }
    if (got == 0) {
      // The file shrank between fstat and read.
      return Status::error(Code::kDataLoss, "cannot read %s: it ended after %zu of %zu bytes", path, done, n);
    }
    done += static_cast<size_t>(got);
  }
  return Status();
}

}  // namespace

Result<FileBytes> read_file(const char* path, size_t max_bytes, const char* what) {
  if (!path || !*path) return Status::error(Code::kInvalidArgument, "no file name given");
  Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
  FileBytes file;
  HEADWAY_RETURN_IF_ERROR(open_regular(path, &fd, &file.file_size));
  if (file.file_size > max_bytes) {
    return Status::error(Code::kInvalidArgument, "%s is %llu bytes, more than the %zu bytes %s may have", path,
                         static_cast<unsigned long long>(file.file_size), max_bytes, what);
  }
  file.bytes.resize(static_cast<size_t>(file.file_size));
  HEADWAY_RETURN_IF_ERROR(read_exactly(path, fd.get(), file.bytes.data(), file.bytes.size()));
  return file;
}

Result<FileBytes> read_file_prefix(const char* path, size_t prefix_bytes) {
  if (!path || !*path) return Status::error(Code::kInvalidArgument, "no file name given");
  Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
  FileBytes file;
  HEADWAY_RETURN_IF_ERROR(open_regular(path, &fd, &file.file_size));
  const size_t n = file.file_size < prefix_bytes ? static_cast<size_t>(file.file_size) : prefix_bytes;
  file.bytes.resize(n);
  HEADWAY_RETURN_IF_ERROR(read_exactly(path, fd.get(), file.bytes.data(), n));
  return file;
}

}  // namespace headway::formats
