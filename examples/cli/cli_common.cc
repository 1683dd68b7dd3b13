#include "examples/cli/cli_common.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "headway/tools/npy.hpp"

namespace headway::cli {

int report(const char* cmd, const Status& status) {
  std::fprintf(stderr, "headway %s: %s\n", cmd, status.message());
  return status.code() == Code::kInternal ? kExitInternal : kExitBadInput;
}

Status read_text_file(const char* flag, const char* path, std::string* out) {
  constexpr size_t kMaxTextFile = size_t{64} << 20;
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return Status::error(Code::kNotFound, "%s %s: %s", flag, path, std::strerror(errno));
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    out->append(buf, n);
    if (out->size() > kMaxTextFile) {
      std::fclose(f);
      return Status::error(Code::kInvalidArgument, "%s %s is larger than %zu bytes", flag, path, kMaxTextFile);
    }
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::error(Code::kInvalidArgument, "%s %s: could not be read (a folder?)", flag, path);
  return Status();
}

bool Flags::next() {
  ++i_;
  if (i_ >= argc_) return false;
  const char* arg = argv_[i_];
  inline_value_ = nullptr;
  const char* eq = std::strchr(arg, '=');
  if (std::strncmp(arg, "--", 2) == 0 && eq != nullptr) {
    name_.assign(arg, static_cast<size_t>(eq - arg));
    inline_storage_ = eq + 1;
    inline_value_ = inline_storage_.c_str();
  } else {
    name_ = arg;
  }
  return true;
}

Status Flags::value(const char** out) {
  if (inline_value_ != nullptr) {
    *out = inline_value_;
    return Status();
  }
  if (i_ + 1 >= argc_) return Status::error(Code::kInvalidArgument, "%s needs a value", name_.c_str());
  *out = argv_[++i_];
  return Status();
}

Status Flags::value_u32(uint32_t* out, uint32_t min, uint32_t max) {
  const char* text = nullptr;
  HEADWAY_RETURN_IF_ERROR(value(&text));
  errno = 0;
  char* end = nullptr;
  const bool digits_only = text[0] >= '0' && text[0] <= '9';
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (!digits_only || errno != 0 || *end != '\0' || v < min || v > max) {
    return Status::error(Code::kInvalidArgument, "%s %s is not a whole number in %u..%u", name_.c_str(), text, min,
                         max);
  }
  *out = static_cast<uint32_t>(v);
  return Status();
}

Status Flags::value_float(float* out) {
  const char* text = nullptr;
  HEADWAY_RETURN_IF_ERROR(value(&text));
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v) || std::fabs(v) > 3.4e38) {
    return Status::error(Code::kInvalidArgument, "%s %s is not a finite number", name_.c_str(), text);
  }
  *out = static_cast<float>(v);
  return Status();
}

Status Flags::value_dtype(DType* out) {
  const char* text = nullptr;
  HEADWAY_RETURN_IF_ERROR(value(&text));
  if (dtype_from_name(text, out) && dtype_plans_weights(*out)) return Status();
  return Status::error(Code::kInvalidArgument, "%s %s is not one of %s", name_.c_str(), text, kPlannedWeightDTypeNames);
}

Status Flags::value_kv_dtype(DType* out) {
  const char* text = nullptr;
  HEADWAY_RETURN_IF_ERROR(value(&text));
  if (dtype_from_name(text, out) && dtype_stores_kv(*out)) return Status();
  return Status::error(Code::kInvalidArgument, "%s %s is not one of %s", name_.c_str(), text, kKvDTypeNames);
}

Status Flags::value_kv_rotation(KvRotation* out) {
  if (inline_value_ == nullptr) {
    *out = KvRotation::kHadamard;
    return Status();
  }
  if (kv_rotation_from_name(inline_value_, out)) return Status();
  return Status::error(Code::kInvalidArgument, "%s=%s is not one of %s", name_.c_str(), inline_value_,
                       kKvRotationNames);
}

Status Flags::value_backend(BackendKind* out) {
  const char* text = nullptr;
  HEADWAY_RETURN_IF_ERROR(value(&text));
  if (!backend_from_name(text, out)) {
    return Status::error(Code::kInvalidArgument, "%s %s is not one of %s", name_.c_str(), text, kBackendNames);
  }
  if (*out == BackendKind::kGpu && !GpuContext::compiled()) {
    return Status::error(Code::kUnsupported,
                         "%s gpu is not available in this build (configured with HEADWAY_GPU=OFF: "
                         "no Vulkan or glslc; toolchains/install-deps.sh gpu)",
                         name_.c_str());
  }
  return Status();
}

Status Flags::unknown() const {
  if (inline_value_ != nullptr) {
    return Status::error(Code::kInvalidArgument, "unknown flag %s (or it takes no value)", name_.c_str());
  }
  return Status::error(Code::kInvalidArgument, "unknown argument %s (see headway %s --help)", name_.c_str(), cmd_);
}

bool parse_projection(const char* text, Projection* out) {
  if (std::strcmp(text, "highway") == 0) *out = Projection::kHighway;
  else if (std::strcmp(text, "xnnpack") == 0) *out = Projection::kXnnpack;
  else return false;
  return true;
}

std::string human_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) v /= 1024.0, ++u;
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof(buf), "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, kUnits[u]);
  return buf;
}

std::string npy_shape_text(const uint64_t* shape, uint32_t ndim) {
  char text[128];
  formats::format_npy_shape(shape, ndim, text, sizeof(text));
  return text;
}

namespace {
constexpr uint64_t kAnySeqLensTotal = uint64_t{1} << 24;
}  // namespace

Status parse_seq_lens(const char* flag, const char* text, uint32_t total, const char* what, std::vector<uint32_t>* cu) {
  cu->assign(1, 0);
  uint64_t sum = 0;
  const char* p = text;
  for (uint32_t index = 0;; ++index) {
    char* end = nullptr;
    errno = 0;
    const bool digit = *p >= '0' && *p <= '9';
    const unsigned long long n = digit ? std::strtoull(p, &end, 10) : 0;
    if (!digit || errno != 0 || (*end != ',' && *end != '\0') || n > UINT32_MAX) {
      return Status::error(Code::kInvalidArgument,
                           "%s %s: item %u is not a whole number (expected lengths such as 12,40,7)", flag, text,
                           index);
    }
    if (n == 0) {
      return Status::error(Code::kInvalidArgument, "%s %s: item %u is 0 (each sequence needs at least one token)", flag,
                           text, index);
    }
    sum += n;
    const uint64_t cap = total != 0 ? total : kAnySeqLensTotal;
    cu->push_back(static_cast<uint32_t>(sum < cap ? sum : cap));  // kept only when the sum is right
    if (*end == '\0') break;
    p = end + 1;
  }
  if (total == 0 && sum > kAnySeqLensTotal) {
    return Status::error(Code::kInvalidArgument, "%s %s: the lengths sum to %llu, more than %llu tokens", flag, text,
                         static_cast<unsigned long long>(sum), static_cast<unsigned long long>(kAnySeqLensTotal));
  }
  if (total != 0 && sum != total) {
    return Status::error(Code::kInvalidArgument, "%s %s: the lengths sum to %llu, but %s has %u tokens", flag, text,
                         static_cast<unsigned long long>(sum), what, total);
  }
  return Status();
}

// "1,2,3" → ids; each a whole number 0..2^31-1, at least one.
Status parse_ids(const char* flag, const char* text, std::vector<int32_t>* ids) {
  ids->clear();
  const char* p = text;
  while (true) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p || errno != 0 || v < 0 || v > 0x7fffffffll || (*end != ',' && *end != '\0')) {
      return Status::error(Code::kInvalidArgument, "%s %s: '%s' is not a token id (a whole number >= 0)", flag, text,
                           p);
    }
    ids->push_back(static_cast<int32_t>(v));
    if (*end == '\0') break;
    p = end + 1;
  }
  return Status();
}

Status PlannedArena::create(const Plan& plan, uint32_t threads) {
  const uint64_t bytes = align_up(plan.arena_bytes);
  memory.p = std::aligned_alloc(kAlignment, static_cast<size_t>(bytes));
  if (memory.p == nullptr) {
    return Status::error(Code::kInternal, "cannot allocate the plan's %llu bytes",
                         static_cast<unsigned long long>(bytes));
  }
  HEADWAY_RETURN_IF_ERROR(arena.bind(plan, memory.p, static_cast<size_t>(bytes)));
  return pool.create(threads);
}

bool ModelSource::take(Flags* flags, Status* s) {
  const std::string& f = flags->name();
  const char** slot = f == "--gguf"        ? &gguf
                      : f == "--model-dir" ? &dir
                      : f == "--config"    ? &config
                      : f == "--weights"   ? &weights
                                           : nullptr;
  if (slot == nullptr) return false;
  *s = flags->value(slot);
  return true;
}

Status ModelSource::check(bool gguf_ok, bool dir_ok) const {
  const int ways = (gguf != nullptr) + (dir != nullptr) + (config != nullptr || weights != nullptr);
  const char* which = gguf_ok && dir_ok ? "--gguf FILE, --model-dir DIR or --config C --weights W"
                      : gguf_ok         ? "--gguf FILE or --config C --weights W"
                                        : "--model-dir DIR or --config C --weights W";
  if (ways != 1 || (gguf != nullptr && !gguf_ok) || (dir != nullptr && !dir_ok)) {
    return Status::error(Code::kInvalidArgument, "give the model as one of %s", which);
  }
  if ((config == nullptr) != (weights == nullptr)) {
    return Status::error(Code::kInvalidArgument, "%s needs %s too", config ? "--config" : "--weights",
                         config ? "--weights FILE" : "--config config.json");
  }
  return Status();
}

const char* ModelSource::name() const { return gguf ? gguf : dir ? dir : weights; }

Status ModelSource::open(ModelFile* file) const {
  if (config != nullptr) return file->open(config, weights);
  return file->open(gguf ? gguf : dir);
}

Result<Tokenizer> ModelSource::tokenizer() const {
  if (gguf != nullptr) return Tokenizer::from_gguf(gguf);
  if (dir != nullptr) return Tokenizer::from_model_dir(dir);
  const std::string c = config;
  const size_t slash = c.rfind('/');
  return Tokenizer::from_model_dir(slash == std::string::npos ? "." : c.substr(0, slash).c_str());
}

}  // namespace headway::cli
