// .npy reading and writing: round trips, every malformed header variant we know of, every
// truncated prefix of a valid file.
#include "headway/tools/npy.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace headway::formats {
namespace {

// A .npy file with this header dict (padded to a 64-byte boundary like np.save) and `data_bytes`
// bytes of data (0x3f, so f32 reads as ~0.75).
std::vector<uint8_t> npy_with_header(const std::string& dict, size_t data_bytes, uint8_t major = 1) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t pre = 8 + len_bytes;
  const size_t total = (pre + dict.size() + 1 + 63) / 64 * 64;
  const size_t header_len = total - pre;
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  for (size_t i = 0; i < len_bytes; ++i) out.push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.resize(total, ' ');
  out[total - 1] = '\n';
  out.resize(total + data_bytes, 0x3f);
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes, const char* source = "q.npy") {
  const Result<NpyArray> r = parse_npy(bytes.data(), bytes.size(), source);
  return r.ok() ? std::string("(ok)") : std::string(r.status().message());
}

TEST_CASE("f32 and f16 arrays round-trip through the encoder and parser") {
  const float f[24] = {1, -2, 3.5f, 0, 1e-3f, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25};
  const uint64_t shape3[3] = {2, 3, 4};
  const std::vector<uint8_t> bytes = encode_npy(DType::kF32, f, shape3, 3);
  // np.save's own layout: v1.0, the dict as Python prints it, data on a 64-byte boundary.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }";
  REQUIRE(bytes.size() == 128 + sizeof(f));
  CHECK(std::string(bytes.begin() + 10, bytes.begin() + 10 + static_cast<long>(dict.size())) == dict);
  CHECK(bytes[127] == '\n');
  CHECK(bytes[8] + 256 * bytes[9] == 118);

  const Result<NpyArray> r = parse_npy(bytes.data(), bytes.size(), "a.npy");
  REQUIRE(r.ok());
  CHECK(r->dtype == DType::kF32);
  CHECK(r->ndim == 3);
  CHECK(r->shape[0] == 2);
  CHECK(r->shape[1] == 3);
  CHECK(r->shape[2] == 4);
  CHECK(r->elements == 24);
  CHECK(std::memcmp(r->f32(), f, sizeof(f)) == 0);

  const uint16_t h[5] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7e00};
  const uint64_t shape1[1] = {5};
  const std::vector<uint8_t> hb = encode_npy(DType::kF16, h, shape1, 1);
  const std::string dict1 = "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }";
  CHECK(std::string(hb.begin() + 10, hb.begin() + 10 + static_cast<long>(dict1.size())) == dict1);
  const Result<NpyArray> rh = parse_npy(hb.data(), hb.size(), "h.npy");
  REQUIRE(rh.ok());
  CHECK(rh->dtype == DType::kF16);
  CHECK(rh->ndim == 1);
  CHECK(std::memcmp(rh->f16_bits(), h, sizeof(h)) == 0);

  const float scalar = 4.0f;
  const std::vector<uint8_t> sb = encode_npy(DType::kF32, &scalar, nullptr, 0);
  const Result<NpyArray> rs = parse_npy(sb.data(), sb.size(), "s.npy");
  REQUIRE(rs.ok());
  CHECK(rs->ndim == 0);
  CHECK(rs->elements == 1);
  CHECK(rs->f32()[0] == 4.0f);
}

TEST_CASE("bool arrays ('|b1') parse only where the caller accepts them") {
  const uint8_t m[6] = {1, 0, 1, 1, 0, 0};
  const uint64_t shape[2] = {2, 3};
  const std::vector<uint8_t> bytes = encode_npy_bool(m, shape, 2);
  const std::string dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(std::string(bytes.begin() + 10, bytes.begin() + 10 + static_cast<long>(dict.size())) == dict);
  REQUIRE(bytes.size() == 128 + sizeof(m));
  const Result<NpyArray> r = parse_npy(bytes.data(), bytes.size(), "m.npy", NpyBool::kAccept);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->boolean);
  CHECK(r->elements == 6);
  CHECK(std::memcmp(r->data.data(), m, sizeof(m)) == 0);
  // A reader of floats never takes the bytes for floats.
  const Result<NpyArray> refused = parse_npy(bytes.data(), bytes.size(), "m.npy");
  REQUIRE(!refused.ok());
  CHECK(refused.status().code() == Code::kUnsupported);
  CHECK(std::string(refused.status().message()) ==
        "npy file m.npy: descr '|b1' (bool) is not supported here: this input is f32 ('<f4') or f16 ('<f2'); "
        "convert with arr.astype(np.float32)");
  // One byte short: the bool element size is what the data is checked against.
  const Result<NpyArray> short_data = parse_npy(bytes.data(), bytes.size() - 1, "m.npy", NpyBool::kAccept);
  REQUIRE(!short_data.ok());
  CHECK(std::string(short_data.status().message()).find("shape (2, 3) of bool needs 6 bytes of data, the file has 5") !=
        std::string::npos);
}

TEST_CASE("versions 2.0 and 3.0, other spellings numpy has written") {
  for (uint8_t major : {1, 2, 3}) {
    CAPTURE(major);
    const auto b = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, major);
    CHECK(error_of(b) == "(ok)");
  }
  // Key order, double quotes, no trailing comma, Python 2 longs, spaces.
  CHECK(error_of(npy_with_header("{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"<f2\"}", 12)) == "(ok)");
  CHECK(error_of(npy_with_header("{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) }", 24)) ==
        "(ok)");
  CHECK(error_of(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4)) == "(ok)");
}

TEST_CASE("every malformed header is an error that names the file and the field") {
  struct Case {
    const char* dict;
    size_t data;
    const char* message;
  };
  const Case cases[] = {
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12,
       "npy file q.npy: descr '>f4' is big-endian; save it little-endian (arr.astype('<f4'))"},
      {"{'descr': '>f2', 'fortran_order': False, 'shape': (3,), }", 6, "descr '>f2' is big-endian"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24,
       "npy file q.npy: descr '<f8' is not supported: headway reads f32 ('<f4') and f16 ('<f2')"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 3, "descr '|u1' is not supported"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", 12, "descr '<i4' is not supported"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12,
       "header: descr: expected a quoted string"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", 24,
       "npy file q.npy is in Fortran order; save it C-ordered (np.ascontiguousarray)"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", 12, "header: fortran_order: expected True or False"},
      {"['descr', '<f4']", 12, "npy file q.npy: the header is not a Python dict literal"},
      {"", 12, "the header is not a Python dict literal"},
      {"descr: <f4", 12, "the header is not a Python dict literal"},
      {"{'descr': '<f4', 'fortran_order': False, }", 12, "header has no 'shape' key"},
      {"{'fortran_order': False, 'shape': (3,), }", 12, "header has no 'descr' key"},
      {"{'descr': '<f4', 'shape': (3,), }", 12, "header has no 'fortran_order' key"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, "key 'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}", 12, "unknown key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0, 4), }", 0, "shape: dim 1 is 0 (an empty array)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", 0, "shape: dim 0 is 0"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, -1), }", 12, "shape: dim 1 is negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 12,
       "shape: dim 0 does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 12,
       "shape (4294967296, 4294967296) is too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2305843009213693952,), }", 12, "is too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4,
       "shape has more than 8 dims"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': 3, }", 12, "header: shape: expected a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }", 12, "header: shape: expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", 12, "header: shape: expected an integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 12, "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", 12, "expected the end of the header"},
      {"{'descr: '<f4', 'fortran_order': False, 'shape': (3,), }", 12,
       "header: key 'descr: ': expected ':', found '<f4'"},
      {"{descr: '<f4'}", 12, "header: key: expected a quoted string"},
      {"{'descr': '<f4", 12, "the string is not closed"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8,
       "npy file q.npy is truncated: shape (3,) of f32 needs 12 bytes of data, the file has 8"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 16,
       "npy file q.npy has extra bytes: shape (3,) of f32 needs 12 bytes of data, the file has 16"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.dict);
    const std::string message = error_of(npy_with_header(c.dict, c.data));
    CHECK_MESSAGE(message.find(c.message) != std::string::npos, message);
    CHECK(message.find("q.npy") != std::string::npos);
  }
}

TEST_CASE("bad preambles: magic, version, header length") {
  std::vector<uint8_t> good = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12);
  CHECK(error_of({}) == "npy file q.npy is empty");
  std::vector<uint8_t> b = good;
  b[1] = 'X';
  CHECK(error_of(b) == "q.npy is not an .npy file (it does not start with \\x93NUMPY)");
  const std::vector<uint8_t> text = {'{', '"', 'a', '"', ':', '1', '}'};
  CHECK(error_of(text).find("is not an .npy file") != std::string::npos);
  b = good;
  b[6] = 4;
  CHECK(error_of(b) == "npy file q.npy: format version 4.0 is not supported (1.0, 2.0, 3.0)");
  b = good;
  b[7] = 1;
  CHECK(error_of(b).find("format version 1.1 is not supported") != std::string::npos);
  b = good;
  b[8] = 0xff;
  b[9] = 0xff;
  CHECK(error_of(b).find("npy file q.npy is truncated: the header is 65535 bytes, the file has") != std::string::npos);
  b = good;  // a header length that stops early leaves the rest of the dict as data
  b[8] = 20;
  b[9] = 0;
  CHECK(error_of(b) == "npy file q.npy: header: key: the string is not closed");
}

TEST_CASE("every truncated prefix of a valid file is an error") {
  const float f[6] = {1, 2, 3, 4, 5, 6};
  const uint64_t shape[2] = {2, 3};
  for (uint8_t major : {1, 2}) {
    const std::vector<uint8_t> full =
        major == 1 ? encode_npy(DType::kF32, f, shape, 2)
                   : npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, 2);
    REQUIRE(error_of(full) == "(ok)");
    for (size_t n = 0; n < full.size(); ++n) {
      const Result<NpyArray> r = parse_npy(full.data(), n, "t.npy");
      if (r.ok()) {
        FAIL("prefix of " << n << " bytes parsed");
        continue;
      }
      const std::string m = r.status().message();
      const bool truncated = m.find("truncated") != std::string::npos || m.find("is empty") != std::string::npos ||
                             m.find("header: ") != std::string::npos;  // header cut by its own length field
      if (!truncated || m.find("t.npy") == std::string::npos) {
        INFO("prefix " << n << ": " << m);
        CHECK(false);
      }
      if (n >= size_t{10} + 2 * (major - 1) + 64) CHECK(r.status().code() == Code::kDataLoss);
    }
  }
}

TEST_CASE("save_npy and load_npy go through a file, missing and unwritable files are errors") {
  char dir[] = "/tmp/headway_npy_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/x.npy";
  const float f[4] = {0.5f, -1.5f, 2.0f, 3.0f};
  const uint64_t shape[2] = {2, 2};
  REQUIRE(save_npy(path.c_str(), DType::kF32, f, shape, 2).ok());
  const Result<NpyArray> r = load_npy(path.c_str());
  REQUIRE(r.ok());
  CHECK(r->elements == 4);
  CHECK(reinterpret_cast<uintptr_t>(r->f32()) % alignof(float) == 0);
  CHECK(std::memcmp(r->f32(), f, sizeof(f)) == 0);

  const std::string missing = std::string(dir) + "/missing.npy";
  const Result<NpyArray> m = load_npy(missing.c_str());
  REQUIRE(!m.ok());
  CHECK(m.status().code() == Code::kNotFound);
  CHECK(std::string(m.status().message()).find("missing.npy") != std::string::npos);

  const std::string bad = std::string(dir) + "/no/such/dir/o.npy";
  const Status s = save_npy(bad.c_str(), DType::kF32, f, shape, 2);
  CHECK(!s.ok());
  CHECK(std::string(s.message()).find("cannot write") != std::string::npos);
  CHECK(!save_npy(path.c_str(), DType::kBF16, f, shape, 2).ok());

  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace headway::formats
