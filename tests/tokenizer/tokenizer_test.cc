// The tokenizers through the C++ API (headway/tools/tokenizer.hpp), on tiny files written here: a
// byte-level BPE tokenizer.json and GGUF, a BERT vocab.txt. Hugging Face's answers on real files
// are tests/tokenizer/hf_tokenizer_check.py's.
#include "headway/tools/tokenizer.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "headway/tools/heap_count.hpp"
#include "tests/formats/gguf_writer.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace {

using test::GgufWriter;
using test::TempDir;

// GPT-2's bytes_to_unicode, written out independently of the runtime's.
std::string byte_char(int b) {
  std::vector<int> bs;
  for (int c = '!'; c <= '~'; ++c) bs.push_back(c);
  for (int c = 0xA1; c <= 0xAC; ++c) bs.push_back(c);
  for (int c = 0xAE; c <= 0xFF; ++c) bs.push_back(c);
  int cp = -1, n = 0;
  for (int c = 0; c < 256; ++c) {
    bool printable = false;
    for (int x : bs) printable |= x == c;
    const int mapped = printable ? c : 256 + n++;
    if (c == b) cp = mapped;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

// The tiny BPE: the 256 byte characters (ids 0..255 in byte order), then merged tokens, then the
// special <|end|>.
const char* const kMerges[][2] = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"\xC4\xA0", "w"}};
const char* const kMerged[] = {"he", "ll", "hell", "hello", "\xC4\xA0w"};
constexpr int32_t kHello = 259, kSpaceW = 260, kEnd = 261;

std::vector<std::string> bpe_tokens() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.push_back(byte_char(b));
  for (const char* m : kMerged) t.push_back(m);
  t.push_back("<|end|>");
  return t;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string bpe_json(const std::string& model_type = "BPE") {
  const std::vector<std::string> t = bpe_tokens();
  std::string j =
      "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":261,\"content\":\"<|end|>\",\"single_word\":false,"
      "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],"
      "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
      "\"trim_offsets\":true,\"use_regex\":true},\"post_processor\":null,"
      "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"" +
      model_type + "\",\"vocab\":{";
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    j += (i ? "," : "") + ("\"" + json_escape(t[i]) + "\":" + std::to_string(i));
  }
  j += "},\"merges\":[";
  for (size_t i = 0; i < std::size(kMerges); ++i) {
    j += (i ? ",\"" : "\"") + json_escape(kMerges[i][0]) + " " + json_escape(kMerges[i][1]) + "\"";
  }
  return j + "]}}";
}

Tokenizer load_bpe(const TempDir& dir) {
  write(dir / "tokenizer.json", bpe_json());
  Result<Tokenizer> t = Tokenizer::from_tokenizer_json((dir / "tokenizer.json").c_str());
  INFO(t.status().message());
  REQUIRE(t.ok());
  return std::move(t.value());
}

GgufWriter bpe_gguf(size_t types, size_t merges_cut = 0, const char* pre = "gpt2") {
  std::vector<std::string> tokens = bpe_tokens();
  std::vector<std::string> merges;
  for (const auto& m : kMerges) merges.push_back(std::string(m[0]) + " " + m[1]);
  merges.resize(merges.size() - merges_cut);
  std::vector<uint32_t> type(types, 1);
  if (types == tokens.size()) type.back() = 3;  // <|end|>: control
  GgufWriter w;
  w.str("general.architecture", "gpt2").str("tokenizer.ggml.model", "gpt2").str("tokenizer.ggml.pre", pre);
  w.string_array("tokenizer.ggml.tokens", tokens).string_array("tokenizer.ggml.merges", merges);
  // token_type is an i32 array in llama.cpp's files; the u32 writer lays out the same bytes.
  w.u32_array("tokenizer.ggml.token_type", type);
  w.u32kv("tokenizer.ggml.bos_token_id", kEnd).u32kv("tokenizer.ggml.eos_token_id", kEnd);
  w.boolkv("tokenizer.ggml.add_bos_token", true);
  return w;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<int32_t> enc(Tokenizer& t, const std::string& text, EncodeOptions o = {}) {
  std::vector<int32_t> ids;
  const Status s = t.encode(text, &ids, o);
  INFO(s.message());
  CHECK(s.ok());
  return ids;
}

std::string dec(Tokenizer& t, const std::vector<int32_t>& ids, DecodeOptions o = {}) {
  std::string text;
  const Status s = t.decode(ids.data(), ids.size(), &text, o);
  INFO(s.message());
  CHECK(s.ok());
  return text;
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

TEST_CASE("tokenizer: byte-level BPE merges by rank, bytes stand for themselves") {
  TempDir dir("tok_bpe");
  Tokenizer t = load_bpe(dir);
  CHECK(t.model() == TokenizerModel::kBpe);
  CHECK(t.vocab_size() == 262);
  const std::vector<int32_t> want = {kHello, kSpaceW, 'o', 'r', 'l', 'd'};
  CHECK(enc(t, "hello world") == want);
  CHECK(dec(t, want) == "hello world");
  // Runs of spaces, newlines, multi-byte characters: lossless.
  const std::string text = "  tabs\t\tand\n\nnewlines  \xC3\xA9\xE4\xBD\xA0\xF0\x9F\x91\x8D ";
  CHECK(dec(t, enc(t, text)) == text);
  CHECK(enc(t, "").empty());
}

TEST_CASE("tokenizer: special tokens in the text, skipped or kept when decoding") {
  TempDir dir("tok_special");
  Tokenizer t = load_bpe(dir);
  CHECK(t.is_special(kEnd));
  const std::vector<int32_t> ids = enc(t, "hello<|end|>hello");
  CHECK(ids == std::vector<int32_t>{kHello, kEnd, kHello});
  CHECK(dec(t, ids) == "hellohello");
  DecodeOptions keep;
  keep.skip_special = false;
  CHECK(dec(t, ids, keep) == "hello<|end|>hello");
  EncodeOptions plain;
  plain.parse_special = false;
  CHECK(enc(t, "<|end|>", plain).size() > 1);
}

TEST_CASE("tokenizer: caller buffers report the size they need") {
  TempDir dir("tok_buffers");
  Tokenizer t = load_bpe(dir);
  int32_t ids[4];
  size_t count = 0;
  Status s = t.encode("hello world", ids, 4, &count);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(count == 6);
  CHECK(std::string(s.message()).find("6 ids") != std::string::npos);
  int32_t enough[6];
  CHECK(t.encode("hello world", enough, 6, &count).ok());
  CHECK(count == 6);
  char text[4];
  size_t length = 0;
  s = t.decode(enough, 6, text, sizeof(text), &length);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(length == 11);

  // After a first call has grown the scratch, encode and decode into caller buffers allocate
  // nothing.
  char out[64];
  CHECK(t.encode("hello world, again and again", ids, 4, &count).code() == Code::kOutOfRange);
  HeapCount heap;
  CHECK(t.encode("hello world, again and again", ids, 4, &count).code() == Code::kOutOfRange);
  CHECK(t.decode(enough, 6, out, sizeof(out), &length).ok());
  CHECK(heap.stop() == 0);
}

TEST_CASE("tokenizer: ids outside the vocabulary are errors naming the id and the size") {
  TempDir dir("tok_bad_id");
  Tokenizer t = load_bpe(dir);
  const int32_t bad[] = {kHello, 262};
  std::string text;
  const Status s = t.decode(bad, 2, &text);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()).find("id 262") != std::string::npos);
  CHECK(std::string(s.message()).find("262 tokens") != std::string::npos);
  const int32_t negative[] = {-5};
  CHECK_FALSE(t.decode(negative, 1, &text).ok());
  StreamDecoder stream(t);
  char out[64];
  size_t n = 0;
  CHECK(stream.push(262, out, sizeof(out), &n).code() == Code::kInvalidArgument);
}

TEST_CASE("tokenizer: invalid UTF-8 becomes U+FFFD, one per maximal subpart") {
  TempDir dir("tok_invalid");
  Tokenizer t = load_bpe(dir);
  CHECK(dec(t, enc(t,
                   "a\xFF"
                   "b")) ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(dec(t, enc(t, "\xE2\x82")) == "\xEF\xBF\xBD");                              // a cut sequence: one
  CHECK(dec(t, enc(t, "\xED\xA0\x80")) == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate: three
  // Decoding the token of a lone lead byte gives U+FFFD too.
  CHECK(dec(t, {0xE2}) == "\xEF\xBF\xBD");
}

TEST_CASE("tokenizer: the stream decoder never emits half a character") {
  TempDir dir("tok_stream");
  Tokenizer t = load_bpe(dir);
  const std::string text = "h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD!";
  const std::vector<int32_t> ids = enc(t, text);
  StreamDecoder stream(t);
  std::string all;
  char out[64];
  for (int32_t id : ids) {
    size_t n = 0;
    REQUIRE(stream.push(id, out, sizeof(out), &n).ok());
    const std::string piece(out, n);
    CHECK(valid_utf8(piece));
    all += piece;
  }
  size_t n = 0;
  CHECK(stream.finish(out, sizeof(out), &n).ok());
  CHECK(n == 0);
  CHECK(all == text);

  // Random byte tokens: every piece valid UTF-8, and the whole equal to decode()'s text.
  test::Rng rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<int32_t> random;
    for (int k = 0; k < 12; ++k) random.push_back(static_cast<int32_t>(rng.next() % 262));
    StreamDecoder s(t);
    std::string joined;
    for (int32_t id : random) {
      REQUIRE(s.push(id, out, sizeof(out), &n).ok());
      CHECK(valid_utf8(std::string(out, n)));
      joined.append(out, n);
    }
    REQUIRE(s.finish(out, sizeof(out), &n).ok());
    joined.append(out, n);
    CHECK(joined == dec(t, random));
  }
}

TEST_CASE("tokenizer: random bytes encode without a crash and decode back to the sanitized text") {
  TempDir dir("tok_random");
  Tokenizer t = load_bpe(dir);
  test::Rng rng(11);
  for (int round = 0; round < 500; ++round) {
    std::string text;
    const size_t len = rng.next() % 48;
    for (size_t i = 0; i < len; ++i) text += static_cast<char>(rng.next() % 7 == 0 ? '<' : rng.next() & 0xFF);
    const std::vector<int32_t> ids = enc(t, text);
    const std::string back = dec(t, ids);
    CHECK(valid_utf8(back));
    if (valid_utf8(text) && text.find("<|end|>") == std::string::npos) CHECK(back == text);
  }
}

TEST_CASE("tokenizer: a GGUF's tokens, types and merges, and BOS as the file says") {
  TempDir dir("tok_gguf");
  write_bytes(dir / "t.gguf", bpe_gguf(262).bytes());
  Result<Tokenizer> r = Tokenizer::from_gguf((dir / "t.gguf").c_str());
  INFO(r.status().message());
  REQUIRE(r.ok());
  Tokenizer& t = r.value();
  CHECK(t.bos_id() == kEnd);
  CHECK(t.add_bos());
  CHECK(enc(t, "hello world") == std::vector<int32_t>{kEnd, kHello, kSpaceW, 'o', 'r', 'l', 'd'});
  EncodeOptions bare;
  bare.add_special = false;
  CHECK(enc(t, "hello<|end|>", bare) == std::vector<int32_t>{kHello, kEnd});
  CHECK(dec(t, {kEnd, kHello}) == "hello");
}

TEST_CASE("tokenizer: a GGUF control token spelled outside the byte alphabet is plain text") {
  // transformers leaves such a token out of the special tokens (a converter's mislabel): "<a b>"
  // has a real space where a byte-level vocabulary writes U+0120.
  TempDir dir("tok_mislabel");
  std::vector<std::string> tokens = bpe_tokens();
  tokens.push_back("<a b>");
  std::vector<uint32_t> types(tokens.size(), 1);
  types[kEnd] = 3;
  types.back() = 3;
  GgufWriter w;
  w.str("tokenizer.ggml.model", "gpt2").str("tokenizer.ggml.pre", "gpt2");
  w.string_array("tokenizer.ggml.tokens", tokens).u32_array("tokenizer.ggml.token_type", types);
  w.string_array("tokenizer.ggml.merges", {});
  write_bytes(dir / "t.gguf", w.bytes());
  Result<Tokenizer> r = Tokenizer::from_gguf((dir / "t.gguf").c_str());
  INFO(r.status().message());
  REQUIRE(r.ok());
  CHECK(enc(r.value(), "<|end|>") == std::vector<int32_t>{kEnd});
  CHECK(enc(r.value(), "<a b>").size() == 5);
  CHECK_FALSE(r.value().is_special(262));
}

TEST_CASE("tokenizer: bad files name the file and the field") {
  TempDir dir("tok_bad_files");
  auto gguf_error = [&](const GgufWriter& w) {
    write_bytes(dir / "bad.gguf", w.bytes());
    Result<Tokenizer> r = Tokenizer::from_gguf((dir / "bad.gguf").c_str());
    CHECK_FALSE(r.ok());
    return std::string(r.status().message());
  };
  std::string m = gguf_error(bpe_gguf(100));
  CHECK(m.find("bad.gguf") != std::string::npos);
  CHECK(m.find("tokenizer.ggml.token_type has 100 entries, tokenizer.ggml.tokens 262") != std::string::npos);
  m = gguf_error(bpe_gguf(262, 0, "mystery"));
  CHECK(m.find("tokenizer.ggml.pre \"mystery\"") != std::string::npos);
  GgufWriter rwkv;
  rwkv.str("tokenizer.ggml.model", "rwkv");
  m = gguf_error(rwkv);
  CHECK(m.find("tokenizer.ggml.model \"rwkv\"") != std::string::npos);
  GgufWriter t5;  // a Unigram without scores
  t5.str("tokenizer.ggml.model", "t5").string_array("tokenizer.ggml.tokens", {"<unk>", "a"});
  CHECK(gguf_error(t5).find("no tokenizer.ggml.scores") != std::string::npos);
  GgufWriter none;
  none.str("general.architecture", "llama");
  CHECK(gguf_error(none).find("no tokenizer.ggml.model") != std::string::npos);
  // A merge naming a token the vocabulary lacks.
  GgufWriter bad_merge;
  bad_merge.str("tokenizer.ggml.model", "gpt2").string_array("tokenizer.ggml.tokens", {"a", "b"});
  bad_merge.string_array("tokenizer.ggml.merges", {"a b"});
  m = gguf_error(bad_merge);
  CHECK(m.find("tokenizer.ggml.merges[0] \"a b\"") != std::string::npos);

  write(dir / "wordlevel.json", bpe_json("WordLevel"));
  Result<Tokenizer> r = Tokenizer::from_tokenizer_json((dir / "wordlevel.json").c_str());
  CHECK(r.status().code() == Code::kUnsupported);
  CHECK(std::string(r.status().message()).find("wordlevel.json: model.type \"WordLevel\"") != std::string::npos);
  write(dir / "unigram.json", bpe_json("Unigram"));
  r = Tokenizer::from_tokenizer_json((dir / "unigram.json").c_str());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(std::string(r.status().message()).find("unigram.json: model.vocab is not a list of [piece, score]") !=
        std::string::npos);
  write(dir / "broken.json", "{\"model\": ");
  CHECK(Tokenizer::from_tokenizer_json((dir / "broken.json").c_str()).status().code() == Code::kDataLoss);
  CHECK(Tokenizer::from_tokenizer_json((dir / "none.json").c_str()).status().code() == Code::kNotFound);
  CHECK_FALSE(Tokenizer::from_model_dir((dir / "nothing").c_str()).ok());
}

// A SentencePiece-style vocabulary (tokenizer.ggml.model "llama"): <unk>, <s>, </s>, the 256
// byte tokens, then pieces scored so that longer pieces merge first.
GgufWriter spm_gguf(bool add_space_prefix) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<uint32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    tokens.push_back(name);
    types.push_back(6);
  }
  const char* const pieces[] = {"\xE2\x96\x81", "h", "e", "l", "o", "he", "ll", "hell", "hello", "\xE2\x96\x81hello"};
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 0; i < std::size(pieces); ++i) {
    tokens.push_back(pieces[i]);
    types.push_back(1);
    scores.push_back(static_cast<float>(i));  // later pieces score higher
  }
  GgufWriter w;
  w.str("general.architecture", "llama").str("tokenizer.ggml.model", "llama");
  w.string_array("tokenizer.ggml.tokens", tokens).u32_array("tokenizer.ggml.token_type", types);
  w.begin("tokenizer.ggml.scores", test::kArray).u32(test::kF32).u64(scores.size());
  for (float f : scores) w.raw(&f, 4);
  w.u32kv("tokenizer.ggml.bos_token_id", 1).u32kv("tokenizer.ggml.eos_token_id", 2);
  w.u32kv("tokenizer.ggml.unknown_token_id", 0);
  if (!add_space_prefix) w.boolkv("tokenizer.ggml.add_space_prefix", false);
  return w;
}

TEST_CASE("tokenizer: SentencePiece-style GGUF: U+2581 for spaces, merges from scores, byte fallback") {
  TempDir dir("tok_spm");
  write_bytes(dir / "spm.gguf", spm_gguf(true).bytes());
  Result<Tokenizer> r = Tokenizer::from_gguf((dir / "spm.gguf").c_str());
  INFO(r.status().message());
  REQUIRE(r.ok());
  Tokenizer& t = r.value();
  CHECK(t.model() == TokenizerModel::kSentencePiece);
  CHECK(t.add_bos());  // the file does not say: BOS, as llama.cpp and transformers do
  const int32_t space = 259, h = 260, hello = 267, space_hello = 268;
  CHECK(enc(t, "hello") == std::vector<int32_t>{1, space_hello});
  // A piece the vocabulary lacks falls back to its UTF-8 bytes.
  CHECK(enc(t, "hello \xE4\xB8\xAD") == std::vector<int32_t>{1, space_hello, space, 3 + 0xE4, 3 + 0xB8, 3 + 0xAD});
  // After a special token there is no prefix space; a space the text starts with is the prefix.
  CHECK(enc(t, "<s>hello") == std::vector<int32_t>{1, 1, hello});
  CHECK(enc(t, " hello") == std::vector<int32_t>{1, space_hello});
  CHECK(enc(t, "xh") == std::vector<int32_t>{1, space, 3 + 'x', h});
  CHECK(dec(t, {1, space_hello, space, 3 + 0xE4, 3 + 0xB8, 3 + 0xAD}) == "hello \xE4\xB8\xAD");
  // An invalid run of byte tokens: one U+FFFD per byte (Hugging Face's ByteFallback).
  CHECK(dec(t, {space_hello, 3 + 0xE4, 3 + 0xB8}) == "hello\xEF\xBF\xBD\xEF\xBF\xBD");
  // A call that fails on an id past the vocabulary leaves nothing behind for the next one.
  const int32_t bad[] = {3 + 0xE4, 999};
  std::string text;
  CHECK_FALSE(t.decode(bad, 2, &text).ok());
  CHECK(dec(t, {space_hello}) == "hello");
  StreamDecoder stream(t);
  std::string all;
  char out[64];
  for (int32_t id : {1, space_hello, space, 3 + 0xE4, 3 + 0xB8, 3 + 0xAD}) {
    size_t n = 0;
    REQUIRE(stream.push(id, out, sizeof(out), &n).ok());
    CHECK(valid_utf8(std::string(out, n)));
    all.append(out, n);
  }
  CHECK(all == "hello \xE4\xB8\xAD");

  write_bytes(dir / "no_prefix.gguf", spm_gguf(false).bytes());
  Result<Tokenizer> bare = Tokenizer::from_gguf((dir / "no_prefix.gguf").c_str());
  REQUIRE(bare.ok());
  CHECK(enc(bare.value(), "hello") == std::vector<int32_t>{1, hello});

  // Warm, encode and decode into caller buffers allocate nothing.
  int32_t ids[32];
  size_t count = 0, length = 0;
  char decoded[64];
  REQUIRE(t.encode("hello \xE4\xB8\xAD hello", ids, 32, &count).ok());
  HeapCount heap;
  CHECK(t.encode("hello \xE4\xB8\xAD hello", ids, 32, &count).ok());
  CHECK(t.decode(ids, count, decoded, sizeof(decoded), &length).ok());
  CHECK(heap.stop() == 0);
}

TEST_CASE("tokenizer: WordPiece from vocab.txt: BERT's normalizer, punctuation, ## and [UNK]") {
  TempDir dir("tok_wordpiece");
  write(dir / "vocab.txt",
        "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\nun\n##aff\n##able\n,\n!\na\nb\n\xE4\xBD\xA0\n");
  Result<Tokenizer> r = Tokenizer::from_model_dir(dir.operator/("").c_str());
  INFO(r.status().message());
  REQUIRE(r.ok());
  Tokenizer& t = r.value();
  CHECK(t.model() == TokenizerModel::kWordPiece);
  // Lowercased, accents stripped (Ü → u), punctuation split, ## continuations, [CLS] ... [SEP].
  CHECK(enc(t, "Hello, unaffable WORLDS! \xC3\x9Cnaff") == std::vector<int32_t>{2, 5, 11, 8, 9, 10, 6, 7, 12, 8, 9, 3});
  CHECK(enc(t,
            "a\xE4\xBD\xA0"
            "b") == std::vector<int32_t>{2, 13, 15, 14, 3});              // CJK split off
  CHECK(enc(t, "hellox") == std::vector<int32_t>{2, 1, 3});               // a part unknown: [UNK]
  CHECK(enc(t, std::string(101, 'a')) == std::vector<int32_t>{2, 1, 3});  // past 100 characters
  CHECK(enc(t, "hello [SEP] world") == std::vector<int32_t>{2, 5, 3, 6, 3});
  CHECK(dec(t, {2, 5, 11, 8, 9, 10, 12, 3}) == "hello, unaffable!");
  StreamDecoder stream(t);
  std::string all;
  char out[64];
  for (int32_t id : {2, 5, 8, 9, 10, 6, 3}) {
    size_t n = 0;
    REQUIRE(stream.push(id, out, sizeof(out), &n).ok());
    all.append(out, n);
  }
  CHECK(all == "hello unaffable world");

  // Warm, encode and decode into caller buffers allocate nothing.
  int32_t ids[32];
  size_t count = 0, length = 0;
  char text[64];
  REQUIRE(t.encode("Hello, unaffable WORLDS!", ids, 32, &count).ok());
  HeapCount heap;
  CHECK(t.encode("Hello, unaffable WORLDS!", ids, 32, &count).ok());
  CHECK(t.decode(ids, count, text, sizeof(text), &length).ok());
  CHECK(heap.stop() == 0);
}

// Hugging Face's Unigram: the docstring's example of `Unigram::encode` (pieces "abcd", "a", "cd"
// and the unknown "xx" fused), with byte fallback for the unknown run, and the refusals.
TEST_CASE("tokenizer: Unigram takes the best-scoring split, unknown characters fused or as bytes") {
  TempDir dir("unigram");
  auto unigram = [&](const char* name, bool byte_fallback, const char* unk_id, const char* pre) {
    std::string j = "{\"model\":{\"type\":\"Unigram\",\"unk_id\":" + std::string(unk_id) +
                    ",\"byte_fallback\":" + (byte_fallback ? "true" : "false") +
                    ",\"vocab\":[[\"<unk>\",0],[\"a\",0],[\"b\",0],[\"c\",0],[\"d\",0],[\"cd\",1],"
                    "[\"ab\",2],[\"abc\",5],[\"abcd\",10],[\"<0x78>\",0]]},\"pre_tokenizer\":" +
                    pre +
                    ",\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\u2581\",\"prepend_scheme\":\"never\"}}";
    write(dir / name, j);
    return Tokenizer::from_tokenizer_json((dir / name).c_str());
  };
  const char* metaspace =
      "{\"type\":\"Metaspace\",\"replacement\":\"\u2581\",\"prepend_scheme\":\"never\",\"split\":false}";
  Result<Tokenizer> plain = unigram("plain.json", false, "0", metaspace);
  REQUIRE_MESSAGE(plain.ok(), plain.status().message());
  CHECK(plain.value().model() == TokenizerModel::kUnigram);
  CHECK(enc(plain.value(), "abcdacdxx") == std::vector<int32_t>{8, 1, 5, 0});
  std::string back;
  REQUIRE(plain.value().decode(std::vector<int32_t>{8, 1, 5}.data(), 3, &back).ok());
  CHECK(back == "abcdacd");
  Result<Tokenizer> bytes = unigram("bytes.json", true, "0", metaspace);
  REQUIRE(bytes.ok());
  CHECK(enc(bytes.value(), "abcdacdxx") == std::vector<int32_t>{8, 1, 5, 9, 9});
  CHECK(enc(bytes.value(), "xy") == std::vector<int32_t>{0});  // no <0x79>: the fused run is <unk>

  Result<Tokenizer> no_unk = unigram("no_unk.json", false, "null", metaspace);
  CHECK(std::string(no_unk.status().message()).find("no_unk.json: model.unk_id is not an index") != std::string::npos);
  Result<Tokenizer> bytelevel = unigram("bytelevel.json", false, "0", "{\"type\":\"ByteLevel\"}");
  CHECK(bytelevel.status().code() == Code::kUnsupported);
  CHECK(std::string(bytelevel.status().message()).find("bytelevel.json") != std::string::npos);
}

// T5's GGUF (tokenizer.ggml.model t5) as transformers' T5Tokenizer reads it: its [PADn] sentinels
// named <extra_id_99> down, special; words between whitespace each behind one U+2581; </s> after.
TEST_CASE("tokenizer: a T5 GGUF is a Unigram over whitespace-split words, sentinels named") {
  TempDir dir("tok_t5");
  const std::vector<std::string> tokens = {"<pad>",
                                           "</s>",
                                           "<unk>",
                                           "\xE2\x96\x81"
                                           "a",
                                           "a",
                                           "[PAD5]",
                                           "[PAD6]",
                                           "b"};
  const std::vector<uint32_t> types = {3, 3, 2, 1, 1, 1, 1, 1};
  GgufWriter w;
  w.str("general.architecture", "t5").str("tokenizer.ggml.model", "t5");
  w.string_array("tokenizer.ggml.tokens", tokens).u32_array("tokenizer.ggml.token_type", types);
  w.begin("tokenizer.ggml.scores", test::kArray).u32(test::kF32).u64(tokens.size());
  for (const float score : {0.0f, 0.0f, 0.0f, -1.0f, -2.0f, 0.0f, 0.0f, -3.0f}) w.raw(&score, 4);
  w.u32kv("tokenizer.ggml.unknown_token_id", 2).u32kv("tokenizer.ggml.eos_token_id", 1);
  write_bytes(dir / "t5.gguf", w.bytes());
  Result<Tokenizer> r = Tokenizer::from_gguf((dir / "t5.gguf").c_str());
  INFO(std::string(r.status().message()));
  REQUIRE(r.ok());
  Tokenizer& t = r.value();
  CHECK(t.model() == TokenizerModel::kUnigram);
  CHECK(t.token_text(5) == "<extra_id_99>");
  CHECK(t.token_text(6) == "<extra_id_98>");
  CHECK(t.is_special(6));
  CHECK(enc(t, "a <extra_id_98>") == std::vector<int32_t>{3, 6, 1});
  // "▁x": no one-character token for U+2581 or x, one fused <unk>; "b" alone is "▁" + "b": <unk>, b.
  CHECK(enc(t, " x\t\n a  ") == std::vector<int32_t>{2, 3, 1});
  CHECK(enc(t, "b") == std::vector<int32_t>{2, 7, 1});
  CHECK(dec(t, {3, 3, 1}) == "a a");
}

}  // namespace
}  // namespace headway
