#include "headway/tools/state_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/formats/file_bytes.hpp"

namespace headway {
namespace {

constexpr char kIdsTag[4] = {'H', 'W', 'I', 'D'};
constexpr size_t kTrailerBytes = sizeof(uint32_t) + sizeof(kIdsTag);

// The trailer of a file's last bytes `tail` [n]: the ids' count, checked against the file's size.
Status parse_trailer(const char* path, const uint8_t* tail, uint64_t file_size, uint32_t* n_ids) {
  if (std::memcmp(tail + sizeof(uint32_t), kIdsTag, sizeof(kIdsTag)) != 0) {
    return Status::error(Code::kDataLoss, "%s: not a headway state file (it does not end with \"HWID\")", path);
  }
  uint32_t n = 0;
  std::memcpy(&n, tail, sizeof(n));
  if (uint64_t{n} * sizeof(int32_t) + kTrailerBytes > file_size) {
    return Status::error(Code::kDataLoss, "%s: %u token ids do not fit in its %llu bytes (truncated)", path, n,
                         static_cast<unsigned long long>(file_size));
  }
  *n_ids = n;
  return Status();
}

Status prefixed(const char* path, const Status& s) {
  return s.ok() ? s : Status::error(s.code(), "%s: %s", path, s.message());
}

}  // namespace

Status save_model_state(const Model& model, const char* path, const int32_t* ids, uint32_t n_ids) {
  if (path == nullptr || *path == '\0') return Status::error(Code::kInvalidArgument, "no file name given");
  if (n_ids != 0 && (ids == nullptr || n_ids != model.position())) {
    return Status::error(Code::kInvalidArgument, "%s: %u token ids%s for a state at position %u", path, n_ids,
                         ids == nullptr ? " (null)" : "", model.position());
  }
  const uint64_t state = model.state_bytes();
  std::vector<uint8_t> bytes(static_cast<size_t>(state) + size_t{n_ids} * sizeof(int32_t) + kTrailerBytes);
  size_t written = 0;
  HEADWAY_RETURN_IF_ERROR(prefixed(path, model.save_state(bytes.data(), static_cast<size_t>(state), &written)));
  uint8_t* o = bytes.data() + written;
  if (n_ids != 0) std::memcpy(o, ids, size_t{n_ids} * sizeof(int32_t));
  o += size_t{n_ids} * sizeof(int32_t);
  std::memcpy(o, &n_ids, sizeof(n_ids));
  std::memcpy(o + sizeof(n_ids), kIdsTag, sizeof(kIdsTag));

  const std::string tmp = std::string(path) + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    const int err = errno;
    return Status::error(Code::kInvalidArgument, "cannot write %s: %s", tmp.c_str(), std::strerror(err));
  }
  const size_t wrote = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!closed && wrote == bytes.size()) err = errno;
  if (wrote != bytes.size() || !closed) {
    std::remove(tmp.c_str());
    return Status::error(Code::kInvalidArgument, "cannot write %s: %s", tmp.c_str(), std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return Status::error(Code::kInvalidArgument, "cannot write %s: %s", path, std::strerror(err));
  }
  return Status();
}

Status load_model_state(Model& model, const char* path, std::vector<int32_t>* ids) {
  Result<formats::FileBytes> file = formats::read_file(path, SIZE_MAX, "a state file");
  if (!file.ok()) return file.status();
  const std::vector<uint8_t>& b = file.value().bytes;
  if (b.size() < kTrailerBytes) {
    return Status::error(Code::kDataLoss, "%s: %zu bytes, too short for a headway state file (truncated)", path,
                         b.size());
  }
  uint32_t n = 0;
  HEADWAY_RETURN_IF_ERROR(parse_trailer(path, b.data() + b.size() - kTrailerBytes, b.size(), &n));
  const size_t state = b.size() - kTrailerBytes - size_t{n} * sizeof(int32_t);
  HEADWAY_RETURN_IF_ERROR(prefixed(path, model.load_state(b.data(), state)));
  if (ids != nullptr) {
    ids->resize(n);
    if (n != 0) std::memcpy(ids->data(), b.data() + state, size_t{n} * sizeof(int32_t));
  }
  return Status();
}

Result<std::vector<int32_t>> read_model_state_ids(const char* path) {
  if (path == nullptr || *path == '\0') return Status::error(Code::kInvalidArgument, "no file name given");
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) {
    const int err = errno;
    return Status::error(err == ENOENT ? Code::kNotFound : Code::kInvalidArgument, "cannot open %s: %s", path,
                         std::strerror(err));
  }
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  uint8_t tail[kTrailerBytes];
  if (std::fseek(f, 0, SEEK_END) != 0) {
    const int err = errno;
    return Status::error(Code::kInvalidArgument, "cannot read %s: %s", path, std::strerror(err));
  }
  const long size = std::ftell(f);
  if (size < static_cast<long>(kTrailerBytes)) {
    return Status::error(Code::kDataLoss, "%s: %ld bytes, too short for a headway state file (truncated)", path,
                         size < 0 ? 0L : size);
  }
  if (std::fseek(f, size - static_cast<long>(kTrailerBytes), SEEK_SET) != 0 ||
      std::fread(tail, 1, sizeof(tail), f) != sizeof(tail)) {
    return Status::error(Code::kDataLoss, "cannot read %s: its last %zu bytes", path, kTrailerBytes);
  }
  uint32_t n = 0;
  HEADWAY_RETURN_IF_ERROR(parse_trailer(path, tail, static_cast<uint64_t>(size), &n));
  std::vector<int32_t> ids(n);
  const long at = size - static_cast<long>(kTrailerBytes + size_t{n} * sizeof(int32_t));
  if (n != 0 && (std::fseek(f, at, SEEK_SET) != 0 || std::fread(ids.data(), sizeof(int32_t), n, f) != n)) {
    return Status::error(Code::kDataLoss, "cannot read %s: its %u token ids", path, n);
  }
  return ids;
}

}  // namespace headway
