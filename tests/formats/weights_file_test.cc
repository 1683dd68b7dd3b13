// Weight files: safetensors and GGUF tensors, memory-mapped, and one layer's attention weights
// from either. The tests write their own files into a temp dir: f32/f16/bf16 happy paths, every
// malformed header case the readers check (with the message), every truncation of a valid file,
// shape mismatches, and (with HEADWAY_CLI) `headway layer`'s bad-input exits.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "headway/config.hpp"
#include "headway/ggml_types.hpp"
#include "headway/tools/npy.hpp"
#include "headway/weights.hpp"
#include "headway/tools/weights_file.hpp"
#include "runtime/formats/gguf_tensors.hpp"
#include "runtime/formats/safetensors.hpp"
#include "runtime/formats/weights_loader.hpp"
#include "tests/support/temp_dir.hpp"

namespace headway::formats {
namespace {

using test::TempDir;

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
}

bool contains(const Status& s, const char* part) { return std::strstr(s.message(), part) != nullptr; }
#define CHECK_HAS(status, part) CHECK_MESSAGE(contains(status, part), std::string((status).message()))

// Seeded bytes, so that a view pointing at the wrong tensor shows.
std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

// ---------------------------------------------------------------- safetensors

struct StTensor {
  std::string name, dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
};

uint32_t st_bytes(const std::string& dtype) { return dtype == "F32" ? 4 : dtype == "I64" ? 8 : 2; }

// A safetensors file: 8-byte length, the header padded with spaces to 8 bytes, the data.
std::vector<uint8_t> st_raw(const std::string& header, const std::vector<uint8_t>& data) {
  std::string h = header;
  while (h.size() % 8) h += ' ';
  std::vector<uint8_t> out(8 + h.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(uint64_t{h.size()} >> (8 * i));
  std::memcpy(out.data() + 8, h.data(), h.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + h.size(), data.data(), data.size());
  return out;
}

// A file of `tensors`, data back to back in the given order; shape and offsets as written.
std::vector<uint8_t> st_file(const std::vector<StTensor>& tensors, bool metadata = true) {
  std::string h = "{";
  if (metadata) h += "\"__metadata__\":{\"format\":\"pt\"}";
  std::vector<uint8_t> data;
  for (const StTensor& t : tensors) {
    if (h.size() > 1) h += ",";
    h += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) h += (i ? "," : "") + std::to_string(t.shape[i]);
    h += "],\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + t.bytes.size()) +
         "]}";
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  return st_raw(h + "}", data);
}

StTensor st(const std::string& name, const std::string& dtype, std::vector<uint64_t> shape, uint8_t seed = 1) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return {name, dtype, shape, pattern(static_cast<size_t>(n * st_bytes(dtype)), seed)};
}

Status st_error(const std::vector<uint8_t>& bytes) {
  SafetensorsFile f;
  const Status s = f.parse(bytes.data(), bytes.size(), "m.safetensors");
  REQUIRE_FALSE(s.ok());
  return s;
}

// One tensor entry "w" with `entry` as its JSON value, over `data_bytes` bytes of data.
Status st_entry_error(const std::string& entry, size_t data_bytes = 24) {
  return st_error(st_raw("{\"w\":" + entry + "}", std::vector<uint8_t>(data_bytes)));
}

TEST_CASE("safetensors: f32, f16 and bf16 tensors are views into the mapped file") {
  TempDir dir("weights");
  const std::vector<StTensor> ts = {st("a.f32", "F32", {3, 5}, 1), st("b.f16", "F16", {4, 2}, 2),
                                    st("c.bf16", "BF16", {6}, 3), st("d.scalar", "F32", {}, 4)};
  write_file(dir / "m.safetensors", st_file(ts));
  SafetensorsFile f;
  const Status s = f.open((dir / "m.safetensors").c_str());
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(f.tensor_count() == 4);  // __metadata__ is not a tensor

  struct Want {
    const char* name;
    DType dtype;
    uint32_t rows, cols, rank;
    size_t index;
  };
  for (const Want& w : {Want{"a.f32", DType::kF32, 3, 5, 2, 0}, Want{"b.f16", DType::kF16, 4, 2, 2, 1},
                        Want{"c.bf16", DType::kBF16, 1, 6, 1, 2}, Want{"d.scalar", DType::kF32, 1, 1, 0, 3}}) {
    INFO(w.name);
    uint32_t rank = 99;
    const Result<TensorRef> t = f.find(w.name, &rank);
    REQUIRE_MESSAGE(t.ok(), t.status().message());
    CHECK(t->dtype == w.dtype);
    CHECK(t->rows == w.rows);
    CHECK(t->cols == w.cols);
    CHECK(rank == w.rank);
    const std::vector<uint8_t>& want = ts[w.index].bytes;
    REQUIRE(t->bytes() == want.size());
    CHECK(std::memcmp(t->data, want.data(), want.size()) == 0);
  }
  const Result<TensorRef> missing = f.find("model.layers.0.self_attn.q_proj.weight");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK_HAS(missing.status(), "no tensor 'model.layers.0.self_attn.q_proj.weight'");
}

TEST_CASE("safetensors: tensors headway cannot use fail when asked for, by name") {
  const std::vector<uint8_t> bytes = st_file(
      {st("ids", "I64", {2, 2}), st("cube", "F32", {2, 2, 3}), st("conv", "F32", {2, 1, 3}), st("ok", "F16", {2})});
  SafetensorsFile f;
  REQUIRE(f.parse(bytes.data(), bytes.size(), "m.safetensors").ok());
  CHECK(f.find("ok").ok());
  const Result<TensorRef> ids = f.find("ids");
  REQUIRE_FALSE(ids.ok());
  CHECK_HAS(ids.status(), "m.safetensors: tensor 'ids' has dtype I64; headway reads F32, F16 and BF16 weights");
  const Result<TensorRef> cube = f.find("cube");
  REQUIRE_FALSE(cube.ok());
  CHECK_HAS(cube.status(), "tensor 'cube' has rank 3 (shape [2, 2, 3]); headway reads 1-D and 2-D weights (and");
  // A depthwise convolution's [channels, 1, taps] (Gated DeltaNet's conv1d) reads as [channels, taps].
  uint32_t rank = 0;
  const Result<TensorRef> conv = f.find("conv", &rank);
  REQUIRE(conv.ok());
  CHECK(rank == 3);
  CHECK(conv->rows == 2);
  CHECK(conv->cols == 3);
}

TEST_CASE("safetensors: a misaligned tensor is refused, not read") {
  // An F16 tensor of 3 elements (6 bytes) puts the next F32 tensor at a 2-byte boundary.
  const std::vector<uint8_t> bytes = st_file({st("a", "F16", {3}), st("b", "F32", {2})}, false);
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
  std::memcpy(aligned.data(), bytes.data(), bytes.size());
  SafetensorsFile f;
  REQUIRE(f.parse(reinterpret_cast<const uint8_t*>(aligned.data()), bytes.size(), "m.safetensors").ok());
  const Result<TensorRef> b = f.find("b");
  REQUIRE_FALSE(b.ok());
  CHECK_HAS(b.status(), "tensor 'b' starts at file offset");
  CHECK_HAS(b.status(), "not a multiple of its 4-byte F32 elements");
}

TEST_CASE("safetensors: malformed headers name the file, the tensor and the value") {
  SUBCASE("too short for the length") { CHECK_HAS(st_error({1, 2, 3}), "m.safetensors is 3 bytes, too short"); }
  SUBCASE("header length over 100 MiB") {
    std::vector<uint8_t> b(16, 0);
    b[0] = 0x01, b[3] = 0x10;  // 0x10000001 = 268435457
    CHECK_HAS(st_error(b), "safetensors header length 268435457 is more than the 104857600 bytes allowed");
  }
  SUBCASE("header length past the end of the file") {
    std::vector<uint8_t> b = st_raw("{}", {});
    b[0] = 64;
    CHECK_HAS(st_error(b), "header length 64 runs past the end of the file (8 bytes after the length)");
  }
  SUBCASE("a header length of 2^64 - 1") {
    std::vector<uint8_t> b(16, 0xff);
    CHECK_HAS(st_error(b), "header length 18446744073709551615 is more than");
  }
  SUBCASE("not JSON") {
    CHECK_HAS(st_error(st_raw("{\"w\": [1, }", {})), "the safetensors header is not valid JSON: ");
  }
  SUBCASE("not an object") { CHECK_HAS(st_error(st_raw("[1, 2]", {})), "the safetensors header is an array"); }
  SUBCASE("duplicate names") {
    const std::string e = "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}";
    CHECK_HAS(st_error(st_raw("{\"w\":" + e + ",\"w\":" + e + "}", std::vector<uint8_t>(4))),
              "tensor 'w' appears twice in the safetensors header");
  }
  SUBCASE("entry not an object") { CHECK_HAS(st_entry_error("[1]"), "tensor 'w' is an array, expected an object"); }
  SUBCASE("no dtype") {
    CHECK_HAS(st_entry_error("{\"shape\":[2],\"data_offsets\":[0,8]}"), "m.safetensors: tensor 'w' has no dtype");
  }
  SUBCASE("no data_offsets") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[2]}"), "tensor 'w' has no data_offsets");
  }
  SUBCASE("dtype not a string") {
    CHECK_HAS(st_entry_error("{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}"), "tensor 'w' has dtype a number");
  }
  SUBCASE("unknown dtype") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,4]}"),
              "tensor 'w' has unknown dtype \"Q4\" (known: F32, F16, BF16");
  }
  SUBCASE("shape not an array") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":6,\"data_offsets\":[0,24]}"),
              "tensor 'w' has shape a number, expected an array of sizes");
  }
  SUBCASE("negative dim") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,24]}"),
              "tensor 'w' has shape[1] a negative number, expected a non-negative integer");
  }
  SUBCASE("fractional dim") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,24]}"),
              "tensor 'w' has shape[0] a fractional number");
  }
  SUBCASE("rank beyond the reader's limit") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}"),
              "tensor 'w' has rank 9, more than 8");
  }
  SUBCASE("data_offsets of the wrong form") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0]}"),
              "tensor 'w' has data_offsets of another form, expected [begin, end]");
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":\"0-24\"}"),
              "tensor 'w' has data_offsets a string, expected [begin, end]");
  }
  SUBCASE("end before begin") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}"),
              "tensor 'w' has data_offsets [8, 4]: the end is before the begin");
  }
  SUBCASE("offsets past the data") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]}"),
              "tensor 'w' has data_offsets [0, 32], past the end of the 24 bytes of data after the header");
  }
  SUBCASE("offsets not matching shape and dtype") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}"),
              "tensor 'w' has data_offsets [0, 20] (20 bytes), but shape [2, 3] of F32 needs 24 bytes");
  }
  SUBCASE("a shape whose size overflows 64 bits") {
    CHECK_HAS(st_entry_error("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,24]}"),
              "tensor 'w' has shape [4294967296, 4294967296] of F32, more than the 24 bytes of data in the file");
  }
  SUBCASE("overlapping tensors") {
    const std::string h =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}";
    CHECK_HAS(st_error(st_raw(h, std::vector<uint8_t>(16))),
              "tensors 'a' (data_offsets [0, 16]) and 'b' (data_offsets [8, 16]) overlap");
  }
}

TEST_CASE("safetensors: every truncation of a valid file is an error, never a crash") {
  const std::vector<uint8_t> full = st_file({st("a", "F32", {3, 4}), st("b", "BF16", {5})});
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));  // its own allocation (ASan)
    SafetensorsFile f;
    CHECK_MESSAGE(!f.parse(cut.data(), cut.size(), "cut.safetensors").ok(), n);
  }
}

TEST_CASE("safetensors: open() names the path and the system's reason") {
  TempDir dir("weights");
  SafetensorsFile f;
  const std::string missing = dir / "none.safetensors";
  const Status s = f.open(missing.c_str());
  CHECK(s.code() == Code::kNotFound);
  CHECK_HAS(s, "none.safetensors: No such file or directory");
  const Status d = f.open((dir / "").c_str());
  CHECK_HAS(d, "it is a directory");
  write_file(dir / "empty.safetensors", {});
  CHECK_HAS(f.open((dir / "empty.safetensors").c_str()), "is 0 bytes, too short for a safetensors header");
}

// ---------------------------------------------------------------- GGUF

enum : uint32_t { kGgufU32 = 4, kGgufF32 = 6, kGgufString = 8 };

struct GgTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;
  std::vector<uint8_t> bytes;
  uint64_t offset = ~uint64_t{0};  // ~0: the next aligned offset
};

// Writes GGUF v3 as llama.cpp does: header, kv pairs, tensor infos, padding, aligned data.
class GgufBuilder {
 public:
  GgufBuilder& str(const std::string& key, const std::string& v) {
    kv_key(key, kGgufString);
    string(kv_, v);
    return *this;
  }
  GgufBuilder& u32(const std::string& key, uint32_t v) {
    kv_key(key, kGgufU32);
    put(kv_, v, 4);
    return *this;
  }
  GgufBuilder& f32(const std::string& key, float v) {
    kv_key(key, kGgufF32);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    put(kv_, bits, 4);
    return *this;
  }
  GgufBuilder& tensor(GgTensor t) {
    tensors_.push_back(std::move(t));
    return *this;
  }
  // The bytes; `alignment` must match general.alignment when that key is set. `tensor_count`
  // overrides the count in the header.
  std::vector<uint8_t> bytes(uint32_t alignment = 32, uint64_t tensor_count = ~uint64_t{0}) const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
    put(out, 3, 4);
    put(out, tensor_count == ~uint64_t{0} ? tensors_.size() : tensor_count, 8);
    put(out, kv_count_, 8);
    out.insert(out.end(), kv_.begin(), kv_.end());
    std::vector<uint8_t> data;
    for (const GgTensor& t : tensors_) {
      string(out, t.name);
      put(out, t.ne.size(), 4);
      for (uint64_t d : t.ne) put(out, d, 8);
      put(out, t.type, 4);
      uint64_t offset = t.offset;
      if (offset == ~uint64_t{0}) {
        data.resize((data.size() + alignment - 1) / alignment * alignment);
        offset = data.size();
        data.insert(data.end(), t.bytes.begin(), t.bytes.end());
      }
      put(out, offset, 8);
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment);
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }

 private:
  static void put(std::vector<uint8_t>& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void string(std::vector<uint8_t>& b, const std::string& s) {
    put(b, s.size(), 8);
    b.insert(b.end(), s.begin(), s.end());
  }
  void kv_key(const std::string& key, uint32_t type) {
    string(kv_, key);
    put(kv_, type, 4);
    ++kv_count_;
  }

  std::vector<uint8_t> kv_;
  uint64_t kv_count_ = 0;
  std::vector<GgTensor> tensors_;
};

GgTensor gg(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint8_t seed = 1) {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  const uint32_t eb = type == 0 ? 4 : 2;
  return {name, ne, type, pattern(static_cast<size_t>(n * eb), seed)};
}

Status gguf_error(const std::vector<uint8_t>& b) {
  // Copied into 8-byte-aligned storage, as a mapping would be.
  std::vector<uint64_t> aligned((b.size() + 7) / 8 + 1);
  std::memcpy(aligned.data(), b.data(), b.size());
  GgufFile f;
  const Status s = f.parse(reinterpret_cast<const uint8_t*>(aligned.data()), b.size(), "m.gguf");
  REQUIRE_FALSE(s.ok());
  return s;
}

TEST_CASE("gguf: f32, f16 and bf16 tensors in HF layout, default and explicit alignment") {
  for (uint32_t alignment : {32u, 64u}) {
    INFO("alignment " << alignment);
    TempDir dir("weights");
    GgufBuilder b;
    b.str("general.architecture", "llama");
    if (alignment != 32) b.u32("general.alignment", alignment);
    const std::vector<GgTensor> ts = {gg("blk.0.attn_q.weight", {5, 3}, 0, 1), gg("blk.0.attn_k.weight", {5, 2}, 1, 2),
                                      gg("blk.0.attn_q_norm.weight", {7}, 30, 3)};
    for (const GgTensor& t : ts) b.tensor(t);
    write_file(dir / "m.gguf", b.bytes(alignment));
    GgufFile f;
    const Status s = f.open((dir / "m.gguf").c_str());
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(f.alignment() == alignment);
    CHECK(f.data_start() % alignment == 0);
    struct Want {
      DType dtype;
      uint32_t rows, cols, rank;
    };
    const Want want[] = {{DType::kF32, 3, 5, 2}, {DType::kF16, 2, 5, 2}, {DType::kBF16, 1, 7, 1}};
    for (size_t i = 0; i < 3; ++i) {
      INFO(ts[i].name);
      uint32_t rank = 0;
      const Result<TensorRef> t = f.find(ts[i].name.c_str(), &rank);
      REQUIRE_MESSAGE(t.ok(), t.status().message());
      CHECK(t->dtype == want[i].dtype);
      CHECK(t->rows == want[i].rows);  // ne = [cols, rows]
      CHECK(t->cols == want[i].cols);
      CHECK(rank == want[i].rank);
      REQUIRE(t->bytes() == ts[i].bytes.size());
      CHECK(std::memcmp(t->data, ts[i].bytes.data(), ts[i].bytes.size()) == 0);
      CHECK(reinterpret_cast<uintptr_t>(t->data) % alignment == 0);
    }
  }
}

TEST_CASE("gguf: quantized tensors are handed out in place, unread types and 3-D tensors fail by name and type") {
  GgufBuilder b;
  b.str("general.architecture", "llama");
  b.tensor({"blk.0.attn_q.weight", {32, 4}, 2, std::vector<uint8_t>(4 * 18, 3)});  // q4_0: 4 blocks of 18 bytes
  b.tensor({"blk.0.attn_k.weight", {256, 1}, 12, std::vector<uint8_t>(144, 5)});   // q4_K: 1 block of 144 bytes
  b.tensor({"blk.0.attn_v.weight", {256, 1}, 16, std::vector<uint8_t>(66)});       // iq2_xxs: not read
  b.tensor(gg("cube", {2, 2, 2}, 0));
  b.tensor(gg("flat4", {3, 2, 1, 1}, 0));
  const std::vector<uint8_t> bytes = b.bytes();
  std::vector<uint64_t> aligned(bytes.size() / 8 + 1);
  std::memcpy(aligned.data(), bytes.data(), bytes.size());
  GgufFile f;
  const Status s = f.parse(reinterpret_cast<const uint8_t*>(aligned.data()), bytes.size(), "m.gguf");
  REQUIRE_MESSAGE(s.ok(), s.message());
  const Result<TensorRef> q = f.find("blk.0.attn_q.weight");
  REQUIRE_MESSAGE(q.ok(), q.status().message());
  CHECK(q->dtype == DType::kQ4_0);
  CHECK(q->rows == 4);
  CHECK(q->cols == 32);
  CHECK(q->bytes() == 4 * 18);
  CHECK(static_cast<const uint8_t*>(q->data)[0] == 3);
  const Result<TensorRef> k = f.find("blk.0.attn_k.weight");
  REQUIRE_MESSAGE(k.ok(), k.status().message());
  CHECK(k->dtype == DType::kQ4_K);
  CHECK(k->bytes() == 144);
  CHECK_HAS(f.find("blk.0.attn_v.weight").status(),
            "m.gguf: tensor 'blk.0.attn_v.weight' has ggml type iq2_xxs (16); headway reads f32, f16, bf16, q8_0");
  CHECK_HAS(f.find("cube").status(), "tensor 'cube' has ne [2, 2, 2] (3 dims); headway reads 1-D and 2-D weights");
  const Result<TensorRef> flat = f.find("flat4");  // trailing dims of 1 are 2-D
  REQUIRE_MESSAGE(flat.ok(), flat.status().message());
  CHECK(flat->rows == 2);
  CHECK(flat->cols == 3);
  CHECK(f.find("nope").status().code() == Code::kNotFound);
}

GgufFile parse_aligned(const std::vector<uint8_t>& bytes, std::vector<uint64_t>& storage) {
  storage.assign(bytes.size() / 8 + 1, 0);
  std::memcpy(storage.data(), bytes.data(), bytes.size());
  GgufFile f;
  const Status s = f.parse(reinterpret_cast<const uint8_t*>(storage.data()), bytes.size(), "m.gguf");
  REQUIRE_MESSAGE(s.ok(), s.message());
  return f;
}

TEST_CASE("gguf: tensors of every ggml type in the table are sized and dequantized row by row") {
  GgufBuilder b;
  b.str("general.architecture", "llama");
  struct Want {
    const char* name;
    std::vector<uint64_t> ne;
    GgmlType type;
    uint64_t rows, row_bytes;
  };
  const Want want[] = {{"q4_0", {64, 3}, GgmlType::kQ4_0, 3, 36},   {"q4_1", {32, 2, 2}, GgmlType::kQ4_1, 4, 20},
                       {"q5_0", {32, 1}, GgmlType::kQ5_0, 1, 22},   {"q5_1", {96}, GgmlType::kQ5_1, 1, 72},
                       {"q8_0", {32, 5}, GgmlType::kQ8_0, 5, 34},   {"q2_K", {256, 2}, GgmlType::kQ2_K, 2, 84},
                       {"q3_K", {512, 1}, GgmlType::kQ3_K, 1, 220}, {"q4_K", {256, 3}, GgmlType::kQ4_K, 3, 144},
                       {"q5_K", {256, 1}, GgmlType::kQ5_K, 1, 176}, {"q6_K", {256, 2}, GgmlType::kQ6_K, 2, 210},
                       {"f16", {3, 2}, GgmlType::kF16, 2, 6},       {"f32", {5}, GgmlType::kF32, 1, 20},
                       {"bf16", {2, 2}, GgmlType::kBF16, 2, 4},     {"empty", {0, 4}, GgmlType::kQ4_K, 0, 0}};
  uint8_t seed = 1;
  for (const Want& w : want) {
    b.tensor({w.name, w.ne, static_cast<uint32_t>(w.type), pattern(w.rows * w.row_bytes, seed++)});
  }
  std::vector<uint64_t> storage;
  const GgufFile f = parse_aligned(b.bytes(), storage);
  for (const Want& w : want) {
    INFO(w.name);
    REQUIRE(f.entry(w.name) != nullptr);
    CHECK(f.entry(w.name)->bytes == w.rows * w.row_bytes);
    const Result<GgufFile::Stored> t = f.stored(w.name);
    REQUIRE_MESSAGE(t.ok(), t.status().message());
    CHECK(t->type->type == w.type);
    CHECK(t->rows == w.rows);
    CHECK(t->row_values == w.ne[0]);
    CHECK(t->row_bytes == w.row_bytes);
    const size_t n = static_cast<size_t>(w.ne[0]);
    std::vector<float> all(w.rows * n + 1, -7.0f);
    const Status s = f.dequantize_rows(w.name, 0, w.rows, all.data(), all.size() - 1);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(all.back() == -7.0f);
    for (uint64_t r = 0; r < w.rows; ++r) {
      std::vector<float> row(n);
      REQUIRE(dequantize_ggml_row(w.type, t->data + r * w.row_bytes, w.row_bytes, n, row.data()).ok());
      CHECK(std::memcmp(row.data(), all.data() + r * n, n * sizeof(float)) == 0);
      if (r + 1 == w.rows && r > 0) {  // the last row alone
        std::vector<float> last(n);
        REQUIRE(f.dequantize_rows(w.name, r, 1, last.data(), n).ok());
        CHECK(std::memcmp(row.data(), last.data(), n * sizeof(float)) == 0);
      }
    }
  }
  // find() hands out each in place, in its own type.
  for (const Want& w : want) {
    const Result<TensorRef> t = f.find(w.name);
    if (w.ne.size() > 2) continue;  // a 3-D tensor is refused (above)
    REQUIRE_MESSAGE(t.ok(), t.status().message());
    CHECK(dtype_traits(t->dtype).ggml == static_cast<uint32_t>(w.type));
    CHECK(t->bytes() == w.rows * w.row_bytes);
  }

  std::vector<float> out(1024, -7.0f);
  CHECK_HAS(f.dequantize_rows("q4_0", 2, 2, out.data(), out.size()),
            "m.gguf: tensor 'q4_0' (q4_0) has 3 rows; rows 2 to 4 were asked for");
  CHECK_HAS(f.dequantize_rows("q4_0", ~uint64_t{0}, 2, out.data(), out.size()), "has 3 rows");
  CHECK_HAS(f.dequantize_rows("q6_K", 0, 2, out.data(), 511),
            "tensor 'q6_K' (q6_K): 2 rows of 256 values do not fit in the 511 floats given");
  CHECK_HAS(f.dequantize_rows("q6_K", 0, 1, nullptr, 256), "the output is null");
  CHECK(f.dequantize_rows("nope", 0, 1, out.data(), out.size()).code() == Code::kNotFound);
  for (float v : out) REQUIRE(v == -7.0f);
}

TEST_CASE("gguf: quantized tensors that do not fit, rows of part blocks and unknown types name the tensor") {
  auto base = [] {
    GgufBuilder b;
    b.str("general.architecture", "llama");
    return b;
  };
  CHECK_HAS(gguf_error(base().tensor({"t", {32, 4}, 8, std::vector<uint8_t>(100)}).bytes()),
            "m.gguf: tensor 't' (q8_0, ne [32, 4]) at offset 0 runs past the end of the 100-byte data section: it "
            "needs 136 bytes (4 rows, each 1 block of 34 bytes), 100 are left");
  CHECK_HAS(gguf_error(base().tensor({"t", {512, 2}, 14, std::vector<uint8_t>(839)}).bytes()),
            "tensor 't' (q6_K, ne [512, 2]) at offset 0 runs past the end of the 839-byte data section: it needs 840 "
            "bytes (2 rows, each 2 blocks of 210 bytes), 839 are left");
  CHECK_HAS(gguf_error(base().tensor({"t", {1ull << 62, 1ull << 40}, 2, std::vector<uint8_t>(18)}).bytes()),
            "tensor 't' (q4_0, ne [4611686018427387904, 1099511627776]) at offset 0 runs past the end of the 18-byte "
            "data section: its bytes (ne [4611686018427387904, 1099511627776], 18-byte blocks of 32 values) overflow");
  CHECK_HAS(
      gguf_error(base().tensor({"t", {48, 2}, 2, std::vector<uint8_t>(72)}).bytes()),
      "m.gguf: tensor 't' (q4_0, ne [48, 2]) has rows of 48 values, not a whole number of q4_0's 32-value blocks");
  CHECK_HAS(gguf_error(base().tensor({"t", {128}, 12, std::vector<uint8_t>(144)}).bytes()),
            "has rows of 128 values, not a whole number of q4_K's 256-value blocks");
  CHECK_HAS(gguf_error(base().tensor({"t", {32}, 99, std::vector<uint8_t>(32)}).bytes()),
            "m.gguf: tensor 't' has ggml type 99, which is not a ggml type (headway reads f32, f16, bf16, q4_0");
  CHECK(gguf_error(base().tensor({"t", {32}, 4, std::vector<uint8_t>(32)}).bytes()).code() == Code::kUnsupported);
  GgTensor b = {"b", {32}, 2, std::vector<uint8_t>(18)};  // q4_0 inside the q8_0 before it
  b.offset = 32;
  CHECK_HAS(gguf_error(base().tensor({"a", {64}, 8, std::vector<uint8_t>(68)}).tensor(b).bytes()),
            "tensors 'a' (offset 0, 68 bytes) and 'b' (offset 32) overlap");

  // A ggml type outside the table (iq2_xxs) is accepted unsized; reading it is the error.
  std::vector<uint64_t> storage;
  const GgufFile f = parse_aligned(base().tensor({"iq", {256}, 16, std::vector<uint8_t>(66)}).bytes(), storage);
  CHECK(f.entry("iq")->bytes == 0);
  CHECK_HAS(f.stored("iq").status(), "m.gguf: tensor 'iq' has ggml type iq2_xxs (16); headway reads f32, f16, bf16");
  float out[256];
  CHECK(f.dequantize_rows("iq", 0, 1, out, 256).code() == Code::kUnsupported);
}

TEST_CASE("gguf: malformed tensor tables name the tensor and the value") {
  auto base = [] {
    GgufBuilder b;
    b.str("general.architecture", "llama");
    return b;
  };
  SUBCASE("n_dims 0 and 5") {
    CHECK_HAS(gguf_error(base().tensor({"t", {}, 0, {}}).bytes()), "m.gguf: tensor 't' has n_dims 0, expected 1 to 4");
    CHECK_HAS(gguf_error(base().tensor(gg("t", {1, 1, 1, 1, 2}, 0)).bytes()), "tensor 't' has n_dims 5");
  }
  SUBCASE("offset not a multiple of the alignment") {
    GgTensor t = gg("t", {4}, 0);
    t.offset = 4;
    CHECK_HAS(gguf_error(base().tensor(gg("pad", {8}, 0)).tensor(t).bytes()),
              "tensor 't' has offset 4, not a multiple of the alignment 32");
  }
  SUBCASE("offset past the data") {
    GgTensor t = gg("t", {4}, 0);
    t.offset = 4096;
    CHECK_HAS(gguf_error(base().tensor(gg("a", {4}, 0)).tensor(t).bytes()),
              "tensor 't' has offset 4096, past the end of the 16-byte data section");
  }
  SUBCASE("data past the end of the file") {
    GgTensor t = gg("t", {4, 4}, 0);
    t.bytes.resize(16);
    CHECK_HAS(gguf_error(base().tensor(t).bytes()),
              "tensor 't' (f32, ne [4, 4]) at offset 0 runs past the end of the 16-byte data section");
  }
  SUBCASE("dims whose product overflows") {
    CHECK_HAS(gguf_error(base().tensor({"t", {1ull << 40, 1ull << 40}, 1, std::vector<uint8_t>(8)}).bytes()),
              "tensor 't' (f16, ne [1099511627776, 1099511627776]) at offset 0 runs past the end");
  }
  SUBCASE("duplicate names") {
    CHECK_HAS(gguf_error(base().tensor(gg("t", {4}, 0)).tensor(gg("t", {4}, 0)).bytes()),
              "tensor 't' appears twice in the tensor infos");
  }
  SUBCASE("overlapping tensors") {
    GgTensor b = gg("b", {8}, 0);
    b.offset = 32;
    CHECK_HAS(gguf_error(base().tensor(gg("a", {16}, 0)).tensor(b).bytes()),
              "tensors 'a' (offset 0, 64 bytes) and 'b' (offset 32) overlap");
  }
  SUBCASE("alignment not a power of two") {
    CHECK_HAS(gguf_error(base().u32("general.alignment", 48).tensor(gg("t", {4}, 0)).bytes(48)),
              "general.alignment is 48, expected a power of two");
  }
  SUBCASE("tensor_count larger than the file can hold") {
    CHECK_HAS(gguf_error(base().tensor(gg("t", {4}, 0)).bytes(32, 1ull << 60)),
              "tensor_count 1152921504606846976 cannot fit in the");
  }
  SUBCASE("a name length of 2^63") {
    std::vector<uint8_t> b = base().tensor(gg("t", {4}, 0)).bytes();
    // The tensor info starts right after the kv pair: header 24 + key (8 + 20) + type 4 + value (8 + 5).
    const size_t at = 24 + 8 + 20 + 4 + 8 + 5;
    REQUIRE(b[at] == 1);
    b[at + 7] = 0x80;
    CHECK_HAS(gguf_error(b), "tensor info 0 of 1 has a name of 9223372036854775809 bytes");
  }
}

TEST_CASE("gguf: every truncation of a valid file is an error, never a crash") {
  GgufBuilder b;
  b.str("general.architecture", "llama").u32("llama.embedding_length", 8);
  b.tensor(gg("blk.0.attn_q.weight", {8, 8}, 1)).tensor(gg("blk.0.attn_q.bias", {8}, 0));
  const std::vector<uint8_t> full = b.bytes();
  {
    GgufFile f;
    REQUIRE(f.parse(full.data(), full.size(), "full.gguf").ok());
  }
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    GgufFile f;
    CHECK_MESSAGE(!f.parse(cut.data(), cut.size(), "cut.gguf").ok(), n);
  }
}

// ---------------------------------------------------------------- one layer's weights

// d_model 64, 4 query heads and 2 kv heads of 16 (GQA), 2 layers.
Config small_config() {
  Config c;
  c.set_name("test");
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq = 128;
  c.n_layers = 2;
  c.rope.style = RopeStyle::kNeox;
  return c;
}

std::string hf(uint32_t layer, const char* rest) {
  return "model.layers." + std::to_string(layer) + ".self_attn." + rest;
}

// Layer `layer`'s HF tensors for `c` in `dtype`, plus what `extra` adds.
std::vector<StTensor> hf_layer(const Config& c, uint32_t layer, const std::string& dtype) {
  const uint64_t q = uint64_t{c.n_heads} * c.head_size(), kv = uint64_t{c.kv_heads()} * c.head_size();
  std::vector<StTensor> ts = {st(hf(layer, "q_proj.weight"), dtype, {q, c.d_model}, 1),
                              st(hf(layer, "k_proj.weight"), dtype, {kv, c.d_model}, 2),
                              st(hf(layer, "v_proj.weight"), dtype, {kv, c.d_model}, 3),
                              st(hf(layer, "o_proj.weight"), dtype, {c.d_model, q}, 4)};
  if (c.qkv_bias) {
    ts.push_back(st(hf(layer, "q_proj.bias"), dtype, {q}, 5));
    ts.push_back(st(hf(layer, "k_proj.bias"), dtype, {kv}, 6));
    ts.push_back(st(hf(layer, "v_proj.bias"), dtype, {kv}, 7));
  }
  if (c.o_bias) ts.push_back(st(hf(layer, "o_proj.bias"), dtype, {c.d_model}, 8));
  if (c.qk_norm) {
    ts.push_back(st(hf(layer, "q_norm.weight"), dtype, {c.head_size()}, 9));
    ts.push_back(st(hf(layer, "k_norm.weight"), dtype, {c.head_size()}, 10));
  }
  if (c.sinks) ts.push_back(st(hf(layer, "sinks"), dtype, {c.n_heads}, 11));
  return ts;
}

Result<LayerWeights> load(const TempDir& dir, const std::vector<uint8_t>& bytes, const Config& c, uint32_t layer,
                          WeightFile* file, const char* name = "model.safetensors") {
  write_file(dir / name, bytes);
  const Status s = file->open((dir / name).c_str());
  if (!s.ok()) return s;
  return load_layer_weights(*file, c, layer);
}

TEST_CASE("weights: one layer from safetensors, every family's tensors, every dtype") {
  for (const char* dtype : {"F32", "F16", "BF16"}) {
    for (int family = 0; family < 3; ++family) {  // Llama, Qwen2 (q/k/v bias), Qwen3 (q/k norm, head_dim)
      INFO(dtype << " family " << family);
      TempDir dir("weights");
      Config c = small_config();
      if (family == 1) c.qkv_bias = true;
      if (family == 2) c.qk_norm = true, c.head_dim = 32;  // 4 × 32 = 128 ≠ d_model 64
      std::vector<StTensor> ts = hf_layer(c, 1, dtype);
      const std::vector<StTensor> layer0 = hf_layer(c, 0, dtype);
      ts.insert(ts.end(), layer0.begin(), layer0.end());
      WeightFile file;
      const Result<LayerWeights> w = load(dir, st_file(ts), c, 1, &file);
      REQUIRE_MESSAGE(w.ok(), w.status().message());
      CHECK(file.format() == WeightFormat::kSafetensors);
      const uint32_t q = c.n_heads * c.head_size(), kv = c.kv_heads() * c.head_size();
      CHECK(w->wq.rows == q);
      CHECK(w->wq.cols == 64);
      CHECK(w->wk.rows == kv);
      CHECK(w->wv.rows == kv);
      CHECK(w->wo.rows == 64);
      CHECK(w->wo.cols == q);
      CHECK(std::memcmp(w->wq.data, ts[0].bytes.data(), ts[0].bytes.size()) == 0);  // layer 1, not 0
      CHECK(std::memcmp(w->wo.data, ts[3].bytes.data(), ts[3].bytes.size()) == 0);
      CHECK(w->bq.present() == c.qkv_bias);
      CHECK(w->bv.present() == c.qkv_bias);
      CHECK_FALSE(w->bo.present());
      CHECK(w->q_norm.present() == c.qk_norm);
      if (c.qkv_bias) CHECK(w->bk.cols == kv);
      if (c.qk_norm) CHECK(w->k_norm.cols == 32);
    }
  }
}

TEST_CASE("weights: missing, misshapen and unexpected tensors are errors that name them") {
  TempDir dir("weights");
  const Config c = small_config();
  WeightFile file;
  SUBCASE("a missing projection") {
    std::vector<StTensor> ts = hf_layer(c, 0, "F32");
    ts.erase(ts.begin() + 1);
    const Result<LayerWeights> w = load(dir, st_file(ts), c, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(), "no tensor 'model.layers.0.self_attn.k_proj.weight'");
  }
  SUBCASE("a transposed projection") {
    std::vector<StTensor> ts = hf_layer(c, 0, "F32");
    ts[0].shape = {64, 64};  // q is [64, 64] here: make k [64, 32] -> [32, 64] transposed
    ts[1].shape = {64, 32};
    const Result<LayerWeights> w = load(dir, st_file(ts), c, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(),
              "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [64, 32], expected shape [32, 64] (row-major "
              "[n_kv_heads*head_dim, d_model] with d_model 64, n_heads 4, n_kv_heads 2, head_dim 16)");
  }
  SUBCASE("a 2-D bias") {
    Config cb = c;
    cb.qkv_bias = true;
    std::vector<StTensor> ts = hf_layer(cb, 0, "F32");
    ts[4].shape = {1, 64};
    const Result<LayerWeights> w = load(dir, st_file(ts), cb, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(), "tensor 'model.layers.0.self_attn.q_proj.bias' has shape [1, 64], expected shape [64]");
  }
  SUBCASE("a bias the config does not have") {
    Config cb = c;
    cb.qkv_bias = true;
    const Result<LayerWeights> w = load(dir, st_file(hf_layer(cb, 0, "F32")), c, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(),
              "tensor 'model.layers.0.self_attn.q_proj.bias' is in the file, but the config has no q/k/v bias "
              "(attention_bias false)");
  }
  SUBCASE("a bias the config needs") {
    Config cb = c;
    cb.o_bias = true;
    const Result<LayerWeights> w = load(dir, st_file(hf_layer(c, 0, "F32")), cb, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(), "no tensor 'model.layers.0.self_attn.o_proj.bias', which the config's o_bias needs");
  }
  SUBCASE("q/k norms the config does not have") {
    Config cn = c;
    cn.qk_norm = true;
    const Result<LayerWeights> w = load(dir, st_file(hf_layer(cn, 0, "F32")), c, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(), "'model.layers.0.self_attn.q_norm.weight' is in the file, but the config has no q/k norm");
  }
  SUBCASE("an unsupported dtype") {
    std::vector<StTensor> ts = hf_layer(c, 0, "F32");
    ts[2] = st(ts[2].name, "I64", ts[2].shape);
    const Result<LayerWeights> w = load(dir, st_file(ts), c, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(), "tensor 'model.layers.0.self_attn.v_proj.weight' has dtype I64");
  }
  SUBCASE("a layer past the config's") {
    const Result<LayerWeights> w = load(dir, st_file(hf_layer(c, 0, "F32")), c, 2, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(), "layer 2 is past the config's 2 layers");
  }
  SUBCASE("an invalid config") {
    Config bad = c;
    bad.n_kv_heads = 3;
    const Result<LayerWeights> w = load(dir, st_file(hf_layer(c, 0, "F32")), bad, 0, &file);
    REQUIRE_FALSE(w.ok());
    CHECK_HAS(w.status(), "not divisible by num_key_value_heads 3");
  }
}

// Layer `layer`'s tensors of an MHA encoder with biases under `prefix`, in BERT's names
// (distil false) or DistilBERT's, in the order wq wk wv wo bq bk bv bo.
std::vector<StTensor> encoder_layer(const Config& c, uint32_t layer, const std::string& prefix, bool distil) {
  const std::string base = prefix + (distil ? "transformer.layer." : "encoder.layer.") + std::to_string(layer) +
                           (distil ? ".attention." : ".attention.");
  const char* const names[4] = {distil ? "q_lin" : "self.query", distil ? "k_lin" : "self.key",
                                distil ? "v_lin" : "self.value", distil ? "out_lin" : "output.dense"};
  std::vector<StTensor> ts;
  for (int i = 0; i < 4; ++i) ts.push_back(st(base + names[i] + ".weight", "F32", {c.d_model, c.d_model}, i + 1));
  for (int i = 0; i < 4; ++i) ts.push_back(st(base + names[i] + ".bias", "F32", {c.d_model}, i + 5));
  return ts;
}

Config encoder_config() {
  Config c = small_config();
  c.n_kv_heads = 0;
  c.causal = false;
  c.rope.style = RopeStyle::kNone;
  c.qkv_bias = c.o_bias = true;
  return c;
}

TEST_CASE("weights: BERT-family and DistilBERT names, with or without a task head's prefix") {
  const Config c = encoder_config();
  struct Case {
    const char* prefix;
    bool distil;
    Naming naming;
  };
  for (const Case& k : {Case{"", false, Naming::kHfBert}, Case{"bert.", false, Naming::kHfBert},
                        Case{"roberta.", false, Naming::kHfBert}, Case{"", true, Naming::kHfDistilBert},
                        Case{"distilbert.", true, Naming::kHfDistilBert}}) {
    INFO("prefix '" << k.prefix << "' distil " << k.distil);
    TempDir dir("weights");
    std::vector<StTensor> ts = encoder_layer(c, 1, k.prefix, k.distil);
    const std::vector<StTensor> layer0 = encoder_layer(c, 0, k.prefix, k.distil);
    ts.insert(ts.end(), layer0.begin(), layer0.end());
    // What a sentence-transformers or task checkpoint holds besides the attention.
    ts.push_back(st(std::string(k.prefix) + "embeddings.word_embeddings.weight", "F32", {10, c.d_model}));
    ts.push_back(st(std::string(k.prefix) + "pooler.dense.weight", "F32", {c.d_model, c.d_model}));
    WeightFile file;
    const Result<LayerWeights> w = load(dir, st_file(ts), c, 1, &file);
    REQUIRE_MESSAGE(w.ok(), w.status().message());
    CHECK(file.naming() == k.naming);
    CHECK(file.name_prefix() == k.prefix);
    const TensorRef LayerWeights::*members[8] = {&LayerWeights::wq, &LayerWeights::wk, &LayerWeights::wv,
                                                 &LayerWeights::wo, &LayerWeights::bq, &LayerWeights::bk,
                                                 &LayerWeights::bv, &LayerWeights::bo};
    for (int i = 0; i < 8; ++i) {  // layer 1's bytes, each in its slot
      CHECK(std::memcmp(((*w).*members[i]).data, ts[i].bytes.data(), ts[i].bytes.size()) == 0);
    }
  }
}

TEST_CASE("weights: encoder files' errors name the tensor under its prefix") {
  const Config c = encoder_config();
  TempDir dir("weights");
  WeightFile file;
  SUBCASE("a missing key projection") {
    std::vector<StTensor> ts = encoder_layer(c, 0, "bert.", false);
    ts.erase(ts.begin() + 1);
    CHECK_HAS(load(dir, st_file(ts), c, 0, &file).status(),
              "no tensor 'bert.encoder.layer.0.attention.self.key.weight'");
  }
  SUBCASE("a misshapen output projection") {
    std::vector<StTensor> ts = encoder_layer(c, 0, "distilbert.", true);
    ts[3].shape = {32, 128};
    CHECK_HAS(load(dir, st_file(ts), c, 0, &file).status(),
              "tensor 'distilbert.transformer.layer.0.attention.out_lin.weight' has shape [32, 128], expected "
              "shape [64, 64]");
  }
  SUBCASE("biases the config does not have") {
    Config plain = c;
    plain.qkv_bias = plain.o_bias = false;
    CHECK_HAS(load(dir, st_file(encoder_layer(c, 0, "", false)), plain, 0, &file).status(),
              "tensor 'encoder.layer.0.attention.self.query.bias' is in the file, but the config has no q/k/v bias");
  }
  SUBCASE("q/k norms, which BERT files have no names for") {
    Config normed = c;
    normed.qk_norm = true;
    CHECK_HAS(load(dir, st_file(encoder_layer(c, 0, "", false)), normed, 0, &file).status(),
              "the config asks for q/k norms (qk_norm), which BERT-family models do not have");
  }
  SUBCASE("two models in one file") {
    std::vector<StTensor> ts = encoder_layer(c, 0, "text.", false);
    const std::vector<StTensor> other = encoder_layer(c, 0, "vision.", false);
    ts.insert(ts.end(), other.begin(), other.end());
    CHECK_HAS(load(dir, st_file(ts), c, 0, &file).status(),
              "more than one model in the file ('text.encoder.layer.0.attention.self.query.weight' and "
              "'vision.encoder.layer.0.attention.self.query.weight')");
  }
  SUBCASE("a name that only ends like an anchor is not one") {
    std::vector<StTensor> ts = encoder_layer(c, 0, "", false);
    ts.push_back(st("xencoder.layer.0.attention.self.query.weight", "F32", {c.d_model, c.d_model}));
    const Result<LayerWeights> w = load(dir, st_file(ts), c, 0, &file);
    REQUIRE_MESSAGE(w.ok(), w.status().message());
    CHECK(file.name_prefix().empty());
  }
  SUBCASE("a decoder file under a wrapper's prefix") {
    Config d = small_config();
    std::vector<StTensor> ts = hf_layer(d, 0, "F32");
    for (StTensor& t : ts) t.name = "language_model." + t.name;
    const Result<LayerWeights> w = load(dir, st_file(ts), d, 0, &file);
    REQUIRE_MESSAGE(w.ok(), w.status().message());
    CHECK(file.naming() == Naming::kHfDecoder);
    CHECK(file.name_prefix() == "language_model.");
  }
}

// ModernBERT: one Wqkv [3·d_model, d_model] (rows q, k, v) and Wo, under the masked-LM head's
// "model." prefix; wq, wk, wv (and their biases) are row ranges of it, bytes in place.
TEST_CASE("weights: ModernBERT's fused Wqkv is sliced into q, k and v") {
  Config c = encoder_config();
  c.rope.style = RopeStyle::kNeox;
  const uint64_t d = c.d_model;
  TempDir dir("weights");
  WeightFile file;
  auto layer = [&](uint32_t i, bool bias) {
    const std::string base = "model.layers." + std::to_string(i) + ".attn.";
    std::vector<StTensor> ts = {st(base + "Wqkv.weight", "F16", {3 * d, d}, 3),
                                st(base + "Wo.weight", "F16", {d, d}, 4)};
    if (bias) {
      ts.push_back(st(base + "Wqkv.bias", "F16", {3 * d}, 5));
      ts.push_back(st(base + "Wo.bias", "F16", {d}, 6));
    }
    return ts;
  };
  SUBCASE("with biases, layer 1") {
    std::vector<StTensor> ts = layer(1, true);
    const std::vector<StTensor> layer0 = layer(0, true);
    ts.insert(ts.end(), layer0.begin(), layer0.end());
    ts.push_back(st("model.embeddings.tok_embeddings.weight", "F16", {10, d}));
    const Result<LayerWeights> w = load(dir, st_file(ts), c, 1, &file);
    REQUIRE_MESSAGE(w.ok(), w.status().message());
    CHECK(file.naming() == Naming::kHfModernBert);
    CHECK(file.name_prefix() == "model.");
    const size_t row = d * 2;  // bytes of one f16 row
    const TensorRef* parts[3] = {&w->wq, &w->wk, &w->wv};
    const TensorRef* biases[3] = {&w->bq, &w->bk, &w->bv};
    for (int p = 0; p < 3; ++p) {
      INFO("part " << p);
      CHECK(parts[p]->rows == d);
      CHECK(parts[p]->cols == d);
      CHECK(std::memcmp(parts[p]->data, ts[0].bytes.data() + p * d * row, d * row) == 0);
      CHECK(biases[p]->cols == d);
      CHECK(std::memcmp(biases[p]->data, ts[2].bytes.data() + p * row, row) == 0);
    }
    CHECK(std::memcmp(w->wo.data, ts[1].bytes.data(), ts[1].bytes.size()) == 0);
    CHECK(std::memcmp(w->bo.data, ts[3].bytes.data(), ts[3].bytes.size()) == 0);
  }
  SUBCASE("a Wqkv of the wrong height names the fused layout") {
    Config plain = c;
    plain.qkv_bias = plain.o_bias = false;
    std::vector<StTensor> ts = layer(0, false);
    ts[0].shape = {2 * d, d};
    ts[0].bytes.resize(2 * d * d * 2);
    CHECK_HAS(load(dir, st_file(ts), plain, 0, &file).status(),
              "tensor 'model.layers.0.attn.Wqkv.weight' has shape [128, 64], expected shape [192, 64] (row-major q, "
              "k and v rows of [n_heads*head_dim, d_model]");
  }
  SUBCASE("a bias the config does not have") {
    Config plain = c;
    plain.qkv_bias = plain.o_bias = false;
    CHECK_HAS(load(dir, st_file(layer(0, true)), plain, 0, &file).status(),
              "tensor 'model.layers.0.attn.Wqkv.bias' is in the file, but the config has no q/k/v bias");
  }
}

// A Qwen3-like GGUF: metadata, and layer 0's tensors in llama.cpp's names and ne order.
GgufBuilder qwen3_gguf(const Config& c, uint32_t q_type = 1) {
  const uint64_t q = uint64_t{c.n_heads} * c.head_size(), kv = uint64_t{c.kv_heads()} * c.head_size();
  GgufBuilder b;
  b.str("general.architecture", "qwen3")
      .u32("qwen3.context_length", c.max_seq)
      .u32("qwen3.embedding_length", c.d_model)
      .u32("qwen3.block_count", 1)
      .u32("qwen3.attention.head_count", c.n_heads)
      .u32("qwen3.attention.head_count_kv", c.kv_heads())
      .u32("qwen3.attention.key_length", c.head_size())
      .u32("qwen3.attention.value_length", c.head_size())
      .f32("qwen3.rope.freq_base", 1000000.0f)
      .f32("qwen3.attention.layer_norm_rms_epsilon", 1e-5f);
  b.tensor(gg("blk.0.attn_q.weight", {c.d_model, q}, q_type, 1))
      .tensor(gg("blk.0.attn_k.weight", {c.d_model, kv}, 0, 2))
      .tensor(gg("blk.0.attn_v.weight", {c.d_model, kv}, 30, 3))
      .tensor(gg("blk.0.attn_output.weight", {q, c.d_model}, 1, 4))
      .tensor(gg("blk.0.attn_q_norm.weight", {c.head_size()}, 0, 5))
      .tensor(gg("blk.0.attn_k_norm.weight", {c.head_size()}, 0, 6));
  return b;
}

TEST_CASE("weights: a quantized attention weight is lent in its blocks, and dequantizes") {
  TempDir dir("weights");
  Config want = small_config();
  want.head_dim = 32;
  for (const uint32_t type : {8u, 3u, 12u}) {  // q8_0, q4_1, q4_K (d_model 64: not whole blocks)
    INFO("ggml type " << type);
    if (type == 12u) {
      CHECK_HAS(gguf_error(qwen3_gguf(want, type).bytes()),
                "tensor 'blk.0.attn_q.weight' (q4_K, ne [64, 128]) has rows of 64 values, not a whole number");
      continue;
    }
    write_file(dir / "m.gguf", qwen3_gguf(want, type).bytes());
    WeightFile file;
    REQUIRE(file.open((dir / "m.gguf").c_str()).ok());
    const Result<Config> c = file.gguf_config();
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    const Result<LayerWeights> w = load_layer_weights(file, c.value(), 0);
    REQUIRE_MESSAGE(w.ok(), w.status().message());
    CHECK(w->wq.dtype == (type == 8u ? DType::kQ8_0 : DType::kQ4_1));
    CHECK(w->wq.rows == 128);
    CHECK(w->wq.cols == 64);
    std::vector<float> rows(128 * 64);
    CHECK(file.gguf().dequantize_rows("blk.0.attn_q.weight", 0, 128, rows.data(), rows.size()).ok());
  }
}

TEST_CASE("weights: one layer from GGUF, config from its metadata and tensors") {
  TempDir dir("weights");
  Config want = small_config();
  want.head_dim = 32;
  write_file(dir / "m.gguf", qwen3_gguf(want).bytes());
  WeightFile file;
  REQUIRE(file.open((dir / "m.gguf").c_str()).ok());
  CHECK(file.format() == WeightFormat::kGguf);
  const Result<Config> c = file.gguf_config();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->d_model == 64);
  CHECK(c->n_heads == 4);
  CHECK(c->kv_heads() == 2);
  CHECK(c->head_size() == 32);
  CHECK(c->qk_norm);
  CHECK_FALSE(c->qkv_bias);
  CHECK(c->rms_norm_eps == doctest::Approx(1e-5));
  CHECK(c->rope.theta == doctest::Approx(1e6));
  const Result<LayerWeights> w = load_layer_weights(file, c.value(), 0);
  REQUIRE_MESSAGE(w.ok(), w.status().message());
  CHECK(w->wq.dtype == DType::kF16);
  CHECK(w->wq.rows == 128);
  CHECK(w->wq.cols == 64);
  CHECK(w->wk.dtype == DType::kF32);
  CHECK(w->wv.dtype == DType::kBF16);
  CHECK(w->wo.rows == 64);
  CHECK(w->wo.cols == 128);
  CHECK(w->k_norm.cols == 32);

  const Result<LayerWeights> past = load_layer_weights(file, c.value(), 1);
  CHECK_HAS(past.status(), "layer 1 is past the config's 1 layer (num_hidden_layers)");
  Config small_head = c.value();
  small_head.head_dim = 16;
  const Result<LayerWeights> bad = load_layer_weights(file, small_head, 0);
  REQUIRE_FALSE(bad.ok());
  CHECK_HAS(bad.status(), "tensor 'blk.0.attn_q.weight' has ne [64, 128], expected ne [64, 64]");

  // A bias tensor in a GGUF turns the config's bias on, as llama.cpp's optional tensors do.
  GgufBuilder biased = qwen3_gguf(want);
  biased.tensor(gg("blk.0.attn_q.bias", {128}, 0)).tensor(gg("blk.0.attn_k.bias", {64}, 0));
  biased.tensor(gg("blk.0.attn_v.bias", {64}, 0));
  write_file(dir / "b.gguf", biased.bytes());
  WeightFile bf;
  REQUIRE(bf.open((dir / "b.gguf").c_str()).ok());
  const Result<Config> bc = bf.gguf_config();
  REQUIRE(bc.ok());
  CHECK(bc->qkv_bias);
  const Result<LayerWeights> bw = load_layer_weights(bf, bc.value(), 0);
  REQUIRE_MESSAGE(bw.ok(), bw.status().message());
  CHECK(bw->bq.cols == 128);

  // Llama 3's scaled frequencies as llama.cpp's converter stores them: a rope_freqs tensor.
  GgufBuilder llama3 = qwen3_gguf(want);
  llama3.tensor(gg("rope_freqs.weight", {16}, 0));
  write_file(dir / "r.gguf", llama3.bytes());
  WeightFile rf;
  REQUIRE(rf.open((dir / "r.gguf").c_str()).ok());
  const Result<Config> rc = rf.gguf_config();
  REQUIRE(rc.ok());
  CHECK(rc->rope.scaling == RopeScaling::kOther);
  CHECK(c->rope.scaling == RopeScaling::kNone);
}

TEST_CASE("weights: gpt-oss sink logits, HF self_attn.sinks and GGUF blk.N.attn_sinks.weight [n_heads]") {
  TempDir dir("weights");
  Config c = small_config();
  c.sinks = true;
  WeightFile file;
  SUBCASE("from safetensors, in the file's dtype") {
    for (const char* dtype : {"F32", "BF16"}) {
      const std::vector<StTensor> ts = hf_layer(c, 0, dtype);
      const Result<LayerWeights> w = load(dir, st_file(ts), c, 0, &file);
      REQUIRE_MESSAGE(w.ok(), w.status().message());
      CHECK(w->sinks.rows == 1);
      CHECK(w->sinks.cols == 4);
      CHECK(w->sinks.dtype == (dtype[0] == 'F' ? DType::kF32 : DType::kBF16));
      CHECK(std::memcmp(w->sinks.data, ts.back().bytes.data(), ts.back().bytes.size()) == 0);
    }
  }
  SUBCASE("missing, misshapen, and in a file whose config has none") {
    std::vector<StTensor> ts = hf_layer(c, 0, "F32");
    ts.pop_back();
    Result<LayerWeights> w = load(dir, st_file(ts), c, 0, &file);
    CHECK_HAS(w.status(), "no tensor 'model.layers.0.self_attn.sinks', which the config's sinks needs");
    ts.push_back(st(hf(0, "sinks"), "F32", {2}));
    w = load(dir, st_file(ts), c, 0, &file);
    CHECK_HAS(w.status(),
              "tensor 'model.layers.0.self_attn.sinks' has shape [2], expected shape [4] (row-major [n_heads]");
    ts.back() = st(hf(0, "sinks"), "F32", {1, 4});
    w = load(dir, st_file(ts), c, 0, &file);
    CHECK_HAS(w.status(), "tensor 'model.layers.0.self_attn.sinks' has shape [1, 4], expected shape [4]");
    Config plain = c;
    plain.sinks = false;
    w = load(dir, st_file(hf_layer(c, 0, "F32")), plain, 0, &file);
    CHECK_HAS(w.status(),
              "tensor 'model.layers.0.self_attn.sinks' is in the file, but the config has no learned sink logits "
              "(sinks false)");
  }
  SUBCASE("from GGUF, llama.cpp's name; the tensor turns the config's sinks on") {
    Config want = small_config();
    want.head_dim = 32;
    GgufBuilder b = qwen3_gguf(want);
    b.tensor(gg("blk.0.attn_sinks.weight", {4}, 0, 12));
    write_file(dir / "s.gguf", b.bytes());
    REQUIRE(file.open((dir / "s.gguf").c_str()).ok());
    const Result<Config> gc = file.gguf_config();
    REQUIRE(gc.ok());
    CHECK(gc->sinks);
    const Result<LayerWeights> w = load_layer_weights(file, gc.value(), 0);
    REQUIRE_MESSAGE(w.ok(), w.status().message());
    CHECK(w->sinks.cols == 4);
    CHECK(w->sinks.dtype == DType::kF32);
    GgufBuilder wrong = qwen3_gguf(want);
    wrong.tensor(gg("blk.0.attn_sinks.weight", {8}, 0, 12));
    write_file(dir / "w.gguf", wrong.bytes());
    WeightFile wf;
    REQUIRE(wf.open((dir / "w.gguf").c_str()).ok());
    CHECK_HAS(load_layer_weights(wf, wf.gguf_config().value(), 0).status(),
              "tensor 'blk.0.attn_sinks.weight' has ne [8], expected ne [4]");
  }
}

TEST_CASE("weights: headway::WeightsFile gives what WeightFile gives, and the same errors") {
  TempDir dir("weights");
  Config want = small_config();
  want.head_dim = 32;
  write_file(dir / "m.gguf", qwen3_gguf(want).bytes());
  WeightFile inner;
  REQUIRE(inner.open((dir / "m.gguf").c_str()).ok());
  headway::WeightsFile file;
  CHECK_FALSE(file.is_gguf());
  CHECK(std::string(file.gguf_config().status().message()) == "no weight file is open");
  REQUIRE(file.open((dir / "m.gguf").c_str()).ok());
  CHECK(file.is_gguf());
  const Result<Config> c = file.gguf_config();
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->head_size() == 32);
  const Result<LayerWeights> w = file.layer_weights(c.value(), 0);
  const Result<LayerWeights> w_inner = load_layer_weights(inner, c.value(), 0);
  REQUIRE_MESSAGE(w.ok(), w.status().message());
  REQUIRE(w_inner.ok());
  CHECK(w->wq.dtype == w_inner->wq.dtype);
  CHECK(w->wq.rows == w_inner->wq.rows);
  CHECK(std::memcmp(w->wq.data, w_inner->wq.data, size_t{w->wq.rows} * w->wq.cols * 2) == 0);  // f16
  const Result<LayerWeights> past = file.layer_weights(c.value(), 1);
  CHECK(std::string(past.status().message()) ==
        std::string(load_layer_weights(inner, c.value(), 1).status().message()));

  headway::WeightsFile missing;
  const Status s = missing.open((dir / "no-such.safetensors").c_str());
  WeightFile inner_missing;
  CHECK(std::string(s.message()) == inner_missing.open((dir / "no-such.safetensors").c_str()).message());
}

TEST_CASE("weights: a quantized GGUF projection is named with its type") {
  TempDir dir("weights");
  Config want = small_config();
  want.head_dim = 32;
  GgufBuilder b = qwen3_gguf(want, 0);
  // Patch attn_q's type (f32 -> iq2_xxs) in place: same bytes, a type headway does not read.
  std::vector<uint8_t> bytes = b.bytes();
  const std::string name = "blk.0.attn_q.weight";
  const auto at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
  REQUIRE(at != bytes.end());
  const size_t type_at = static_cast<size_t>(at - bytes.begin()) + name.size() + 4 + 2 * 8;
  REQUIRE(bytes[type_at] == 0);
  bytes[type_at] = 16;
  WeightFile file;
  write_file(dir / "q.gguf", bytes);
  REQUIRE(file.open((dir / "q.gguf").c_str()).ok());
  const Result<LayerWeights> w = load_layer_weights(file, file.gguf_config().value(), 0);
  REQUIRE_FALSE(w.ok());
  CHECK_HAS(w.status(), "tensor 'blk.0.attn_q.weight' has ggml type iq2_xxs (16)");
}

TEST_CASE("weights: a file that is neither format") {
  TempDir dir("weights");
  write_file(dir / "config.json", std::vector<uint8_t>{'{', '"', 'a', '"', ':', '1', '}', '\n', ' ', ' '});
  WeightFile file;
  const Status s = file.open((dir / "config.json").c_str());
  REQUIRE_FALSE(s.ok());
  CHECK_HAS(s, "config.json: safetensors header length");
  CHECK_FALSE(file.gguf_config().ok());
}

#ifdef HEADWAY_CLI
// ---------------------------------------------------------------- headway layer

using test::RunResult;

RunResult run_cli(const TempDir& dir, const std::string& args) {
  return test::run_cli(HEADWAY_CLI, dir, "layer " + args);
}

#define CHECK_CLI(result, code, part)                              \
  do {                                                             \
    const RunResult r_ = (result);                                 \
    CHECK_MESSAGE(r_.exit_code == (code), r_.err);                 \
    CHECK_MESSAGE(r_.err.find(part) != std::string::npos, r_.err); \
  } while (0)

TEST_CASE("cli layer: bad input exits 2 naming the file, tensor or value") {
  TempDir dir("weights");
  const Config c = small_config();
  write_file(dir / "m.safetensors", st_file(hf_layer(c, 0, "F32")));
  const std::string config_json =
      "{\"model_type\":\"llama\",\"hidden_size\":64,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
      "\"max_position_embeddings\":128,\"num_hidden_layers\":1}";
  write_file(dir / "config.json", std::vector<uint8_t>(config_json.begin(), config_json.end()));
  const std::string wide_json =
      "{\"model_type\":\"llama\",\"hidden_size\":64,\"num_attention_heads\":8,\"num_key_value_heads\":2,\"head_dim\":"
      "16,"
      "\"max_position_embeddings\":128,\"num_hidden_layers\":1}";
  write_file(dir / "wide.json", std::vector<uint8_t>(wide_json.begin(), wide_json.end()));
  const uint64_t good_shape[2] = {3, 64}, bad_shape[2] = {3, 32};
  const std::vector<float> x(3 * 64, 0.5f);
  REQUIRE(save_npy((dir / "x.npy").c_str(), DType::kF32, x.data(), good_shape, 2).ok());
  REQUIRE(save_npy((dir / "x32.npy").c_str(), DType::kF32, x.data(), bad_shape, 2).ok());
  const std::string m = dir / "m.safetensors", cfg = dir / "config.json", xs = dir / "x.npy", out = dir / "y.npy";

  CHECK_CLI(run_cli(dir, "--weights " + m + " --layer 0 --x " + xs + " --out " + out), 2, "--config is required with");
  CHECK_CLI(
      run_cli(dir, "--weights " + m + " --config " + dir / "wide.json" + " --layer 0 --x " + xs + " --out " + out), 2,
      "tensor 'model.layers.0.self_attn.q_proj.weight' has shape [64, 64], expected shape [128, 64]");
  CHECK_CLI(run_cli(dir, "--weights " + m + " --config " + cfg + " --layer 1 --x " + xs + " --out " + out), 2,
            "layer 1 is past the config's 1 layer");
  CHECK_CLI(run_cli(dir, "--weights " + m + " --config " + cfg + " --layer 0 --x " + dir / "x32.npy" + " --out " + out),
            2, "x is (3, 32) f32, expected (T, 64) f32");
  CHECK_CLI(run_cli(dir, "--weights " + cfg + " --config " + cfg + " --layer 0 --x " + xs + " --out " + out), 2,
            "safetensors header length");
  CHECK_CLI(run_cli(dir, "--weights " + m + " --config " + cfg + " --layer 0 --x " + xs + " --out " + out +
                             " --start-pos 126"),
            2, "--start-pos 126 with 3 tokens reaches position 128, past the config's context of 128");
  // gpt-oss: a sink logit that is not finite names the layer, the head and the value.
  Config oss = small_config();
  oss.n_layers = 1;
  oss.qkv_bias = oss.o_bias = oss.sinks = true;
  std::vector<StTensor> oss_ts = hf_layer(oss, 0, "F32");
  const float nan = std::nanf("");
  std::memcpy(oss_ts.back().bytes.data() + 4, &nan, 4);
  write_file(dir / "oss.safetensors", st_file(oss_ts));
  const std::string oss_json =
      "{\"model_type\":\"gpt_oss\",\"hidden_size\":64,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
      "\"head_dim\":16,\"max_position_embeddings\":128,\"num_hidden_layers\":1,\"attention_bias\":true,"
      "\"layer_types\":[\"full_attention\"],\"sliding_window\":3}";
  write_file(dir / "oss.json", std::vector<uint8_t>(oss_json.begin(), oss_json.end()));
  CHECK_CLI(run_cli(dir, "--weights " + dir / "oss.safetensors" + " --config " + dir / "oss.json" + " --layer 0 --x " +
                             xs + " --out " + out),
            2, "layer 0: tensor sinks: sinks[1] = nan is not finite");
  CHECK_CLI(run_cli(dir, "--weights " + m + " --config " + cfg + " --layer 0 --x " + xs + " --out " + out +
                             " --start-pos 125 --kv-dtype f16 --threads 2"),
            0, "");
  const Result<NpyArray> y = load_npy(out.c_str());
  REQUIRE_MESSAGE(y.ok(), y.status().message());
  CHECK(y->ndim == 2);
  CHECK(y->shape[0] == 3);
  CHECK(y->shape[1] == 64);
}

#ifdef HEADWAY_CLI_GPU_ENV
// --backend gpu: the same block with the KV cache and attention on the Vulkan device (lavapipe
// here) gives the CPU's y, f32 and f16 K/V, from a start position, prefill in chunks.
TEST_CASE("cli layer: --backend gpu gives the CPU backend's y") {
  TempDir dir("weights");
  const Config c = small_config();
  std::vector<StTensor> ts = hf_layer(c, 0, "F32");
  for (StTensor& w : ts) {  // small finite values instead of the byte pattern
    for (size_t i = 0; i < w.bytes.size() / 4; ++i) {
      const float v = static_cast<float>((i * 2654435761u) % 1000) / 4000.0f - 0.125f;
      std::memcpy(w.bytes.data() + 4 * i, &v, 4);
    }
  }
  write_file(dir / "m.safetensors", st_file(ts));
  const std::string config_json =
      "{\"model_type\":\"llama\",\"hidden_size\":64,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
      "\"max_position_embeddings\":2048,\"num_hidden_layers\":1}";
  write_file(dir / "config.json", std::vector<uint8_t>(config_json.begin(), config_json.end()));
  const uint32_t t = 600;  // past the CLI's 512-token chunk
  std::vector<float> x(size_t{t} * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  const uint64_t shape[2] = {t, 64};
  REQUIRE(save_npy((dir / "x.npy").c_str(), DType::kF32, x.data(), shape, 2).ok());
  const std::string args = "--weights " + dir / "m.safetensors" + " --config " + dir / "config.json" +
                           " --layer 0 --x " + dir / "x.npy" + " --start-pos 9";
  for (const char* kv : {"f32", "f16"}) {
    CAPTURE(kv);
    const RunResult cpu = run_cli(dir, args + " --kv-dtype " + kv + " --out " + dir / "cpu.npy");
    REQUIRE_MESSAGE(cpu.exit_code == 0, cpu.err);
    const RunResult gpu = test::run_cli(
        HEADWAY_CLI, dir, "layer " + args + " --kv-dtype " + kv + " --backend gpu --out " + dir / "gpu.npy",
        HEADWAY_CLI_GPU_ENV);
    REQUIRE_MESSAGE(gpu.exit_code == 0, gpu.err);
    CHECK_MESSAGE(gpu.out.find("attention gpu: ") != std::string::npos, gpu.out);
    const Result<NpyArray> a = load_npy((dir / "cpu.npy").c_str());
    const Result<NpyArray> b = load_npy((dir / "gpu.npy").c_str());
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->elements == b->elements);
    double max_ref = 0, max_diff = 0;
    for (uint64_t i = 0; i < a->elements; ++i) {
      max_ref = std::max(max_ref, std::fabs(double{a->f32()[i]}));
      max_diff = std::max(max_diff, std::fabs(double{a->f32()[i]} - double{b->f32()[i]}));
    }
    CHECK(max_ref > 0.01);
    CHECK(max_diff <= 1e-5 * max_ref + 1e-6);
  }
}
#endif
#endif

}  // namespace
}  // namespace headway::formats
