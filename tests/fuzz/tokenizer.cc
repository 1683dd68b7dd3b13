// Tokenizers: random bytes to encode (byte-level BPE, WordPiece, SentencePiece-style BPE, Unigram)
// and random ids to decode and to the stream decoder, on tiny tokenizers written at start-up, and
// random chat templates and conversations. Invariants: encode never fails on any bytes, the count
// it reports is the count it writes, byte-level BPE gives the (U+FFFD-sanitized) text back,
// decoded text is valid UTF-8, an id past the vocabulary is an error, the stream decoder's pieces
// join to decode()'s text, and a rendered chat prompt holds every user message.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "headway/tools/chat_template.hpp"
#include "headway/tools/tokenizer.hpp"
#include "tests/formats/gguf_writer.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {

using headway::Tokenizer;

Tokenizer* g_bpe = nullptr;
Tokenizer* g_wordpiece = nullptr;
Tokenizer* g_spm = nullptr;
Tokenizer* g_unigram = nullptr;
Tokenizer* g_t5 = nullptr;

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t n = c < 0x80 ? 1 : c >= 0xF5 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    // No overlong forms, surrogates or code points past U+10FFFF.
    const auto c1 = static_cast<uint8_t>(s[i + (n > 1 ? 1 : 0)]);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) {
      return false;
    }
    i += n;
  }
  return true;
}

std::string byte_char(int b) {  // GPT-2's bytes_to_unicode
  auto printable = [](int c) { return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE; };
  int cp = b;
  if (!printable(b)) {
    cp = 256;
    for (int c = 0; c < b; ++c) cp += printable(c) ? 0 : 1;
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

void write(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

Tokenizer* load(headway::Result<Tokenizer> r) {
  if (!r.ok()) std::fprintf(stderr, "fuzz_tokenizer: %s\n", r.status().message());
  FUZZ_CHECK(r.ok());
  return new Tokenizer(std::move(r.value()));
}

void setup() {
  char dir[] = "/tmp/headway_fuzz_tok_XXXXXX";
  FUZZ_CHECK(mkdtemp(dir) != nullptr);
  const std::string d = dir;
  std::string j =
      "{\"added_tokens\":[{\"id\":259,\"content\":\"<|end|>\",\"special\":true,\"lstrip\":true,"
      "\"rstrip\":true}],\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
      "\"use_regex\":true},\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{";
  for (int b = 0; b < 256; ++b) {
    std::string c = byte_char(b);
    if (c == "\"" || c == "\\") c = "\\" + c;
    j += "\"" + c + "\":" + std::to_string(b) + ",";
  }
  j += "\"he\":256,\"ll\":257,\"hell\":258},\"merges\":[\"h e\",\"l l\",\"he ll\"]}}";
  write(d + "/tokenizer.json", j);
  g_bpe = load(Tokenizer::from_tokenizer_json((d + "/tokenizer.json").c_str()));
  write(d + "/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\nun\n##aff\n##able\n,\n!\na\n");
  std::remove((d + "/tokenizer.json").c_str());
  g_wordpiece = load(Tokenizer::from_model_dir(d.c_str()));
  std::remove((d + "/vocab.txt").c_str());
  // SentencePiece-style: <unk>, <s>, </s>, the byte tokens, pieces scored by length.
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<uint32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    tokens.push_back(name);
    types.push_back(6);
  }
  for (const char* p : {"\xE2\x96\x81", "h", "e", "l", "o", "he", "ll", "hell", "hello", "\xE2\x96\x81hello"}) {
    tokens.push_back(p);
    types.push_back(1);
  }
  headway::test::GgufWriter w;
  w.str("general.architecture", "llama").str("tokenizer.ggml.model", "llama");
  w.string_array("tokenizer.ggml.tokens", tokens).u32_array("tokenizer.ggml.token_type", types);
  w.begin("tokenizer.ggml.scores", headway::test::kArray).u32(headway::test::kF32).u64(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float score = static_cast<float>(tokens[i].size());
    w.raw(&score, 4);
  }
  w.u32kv("tokenizer.ggml.bos_token_id", 1).u32kv("tokenizer.ggml.eos_token_id", 2);
  const std::vector<uint8_t> bytes = w.bytes();
  write(d + "/spm.gguf", std::string(bytes.begin(), bytes.end()));
  g_spm = load(Tokenizer::from_gguf((d + "/spm.gguf").c_str()));
  std::remove((d + "/spm.gguf").c_str());
  // Unigram with byte fallback: the byte tokens of 'a'..'z', pieces with scores.
  std::string u =
      "{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\u2581\",\"prepend_scheme\":"
      "\"always\",\"split\":true},\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":true,"
      "\"vocab\":[[\"<unk>\",0],[\"\u2581\",-2],[\"\u2581he\",-3],[\"llo\",-2.5],[\"h\",-4],[\"e\",-4],"
      "[\"l\",-4],[\"o\",-4.5],[\"\u00e9\",-6]";
  for (int b = 'a'; b <= 'z'; ++b) {
    char name[16];
    std::snprintf(name, sizeof(name), ",[\"<0x%02X>\",-9]", b);
    u += name;
  }
  write(d + "/unigram.json", u + "]}}");
  g_unigram = load(Tokenizer::from_tokenizer_json((d + "/unigram.json").c_str()));
  std::remove((d + "/unigram.json").c_str());
  // T5's GGUF: a Unigram over whitespace-split words, a [PAD] sentinel.
  headway::test::GgufWriter t5;
  const std::vector<std::string> t5_tokens = {"<pad>", "</s>", "<unk>", "\xE2\x96\x81", "h", "e", "llo", "[PAD9]"};
  t5.str("general.architecture", "t5").str("tokenizer.ggml.model", "t5");
  t5.string_array("tokenizer.ggml.tokens", t5_tokens);
  t5.begin("tokenizer.ggml.scores", headway::test::kArray).u32(headway::test::kF32).u64(t5_tokens.size());
  for (size_t i = 0; i < t5_tokens.size(); ++i) {
    const float score = -static_cast<float>(i);
    t5.raw(&score, 4);
  }
  t5.u32kv("tokenizer.ggml.unknown_token_id", 2).u32kv("tokenizer.ggml.eos_token_id", 1);
  const std::vector<uint8_t> t5_bytes = t5.bytes();
  write(d + "/t5.gguf", std::string(t5_bytes.begin(), t5_bytes.end()));
  g_t5 = load(Tokenizer::from_gguf((d + "/t5.gguf").c_str()));
  std::remove((d + "/t5.gguf").c_str());
  rmdir(d.c_str());
}

std::vector<int32_t> encode_checked(Tokenizer& t, const std::string& text) {
  int32_t few[2];
  size_t need = 0;
  const headway::Status s = t.encode(text, few, 2, &need);
  FUZZ_CHECK(s.ok() == (need <= 2));
  std::vector<int32_t> ids(need + 1);
  size_t count = 0;
  FUZZ_CHECK(t.encode(text, ids.data(), ids.size(), &count).ok());
  FUZZ_CHECK(count == need);
  ids.resize(count);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && static_cast<uint32_t>(id) < t.vocab_size());
  return ids;
}

}  // namespace

// The payload's first half as a template (prefixed by one of the formats' markers, so that the
// variants are reached), its second half as messages (a role from each piece's first byte). A
// template is recognized or refused; a recognized one renders or refuses the messages, and a
// rendered prompt holds every user message's text.
static void fuzz_chat_template(const std::string& payload) {
  static const char* const kMarkers[] = {"",
                                         "<|im_start|><|im_end|>",
                                         "<|start_header_id|><|eot_id|>",
                                         "<start_of_turn><end_of_turn>",
                                         "<|end|><|user|>",
                                         "[INST][/INST]"};
  const size_t half = payload.size() / 2;
  const std::string marker = payload.empty() ? "" : kMarkers[static_cast<uint8_t>(payload[0]) % 6];
  const headway::Result<headway::ChatTemplate> t =
      headway::ChatTemplate::recognize(marker + payload.substr(0, half), "fuzz", "<s>", "</s>");
  if (!t.ok()) return;
  std::vector<headway::ChatMessage> messages;
  static const char* const kRoles[] = {"system", "user", "assistant", "tool"};
  for (size_t i = half; i < payload.size(); i += 8) {
    messages.push_back({kRoles[static_cast<uint8_t>(payload[i]) % 4], payload.substr(i + 1, 7)});
  }
  std::string out;
  if (!t.value().render(messages, &out).ok()) return;
  for (const headway::ChatMessage& m : messages) {
    if (m.role == "user") FUZZ_CHECK(out.find(t.value().trim ? std::string() : m.content) != std::string::npos);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_bpe == nullptr) setup();
  if (size == 0) return 0;
  // 0 BPE encode, 1 WordPiece encode, 2 BPE decode (special kept), 3 BPE stream, 4 SentencePiece
  // encode, 5 SentencePiece stream, 6 a chat template, 7 Unigram encode, 8 T5 (Unigram) encode.
  const uint8_t mode = data[0] % 9;
  const std::string payload(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode == 6) {
    fuzz_chat_template(payload);
    return 0;
  }
  headway::DecodeOptions keep;
  keep.skip_special = false;
  if (mode == 0 || mode == 1 || mode == 4 || mode == 7 || mode == 8) {
    Tokenizer& t = mode == 0 ? *g_bpe : mode == 1 ? *g_wordpiece : mode == 4 ? *g_spm : mode == 7 ? *g_unigram : *g_t5;
    const std::vector<int32_t> ids = encode_checked(t, payload);
    std::string back;
    FUZZ_CHECK(t.decode(ids.data(), ids.size(), &back, keep).ok());
    FUZZ_CHECK(valid_utf8(back));
    // Byte-level BPE loses nothing but invalid UTF-8 and the whitespace an lstrip/rstrip token takes.
    if (mode == 0 && valid_utf8(payload) && payload.find("<|end|>") == std::string::npos) FUZZ_CHECK(back == payload);
    return 0;
  }
  // Ids from pairs of bytes, some past the vocabulary.
  Tokenizer& t = mode == 5 ? *g_spm : *g_bpe;
  std::vector<int32_t> ids;
  bool outside = false;
  for (size_t i = 0; i + 1 < payload.size(); i += 2) {
    const int32_t id = (static_cast<uint8_t>(payload[i]) | (static_cast<uint8_t>(payload[i + 1]) << 8)) %
                       static_cast<int32_t>(t.vocab_size() + 5);
    outside |= id >= static_cast<int32_t>(t.vocab_size());
    ids.push_back(id);
  }
  std::string text;
  const headway::Status s = t.decode(ids.data(), ids.size(), &text, mode == 2 ? keep : headway::DecodeOptions{});
  FUZZ_CHECK(s.ok() == !outside);
  if (!s.ok()) return 0;
  FUZZ_CHECK(valid_utf8(text));
  if (mode == 3 || mode == 5) {
    headway::StreamDecoder stream(t);
    std::string joined;
    char out[64];
    size_t n = 0;
    for (int32_t id : ids) {
      FUZZ_CHECK(stream.push(id, out, sizeof(out), &n).ok());
      const std::string piece(out, n);
      FUZZ_CHECK(valid_utf8(piece));
      joined += piece;
    }
    FUZZ_CHECK(stream.finish(out, sizeof(out), &n).ok());
    joined.append(out, n);
    // SentencePiece's decode() gives U+FFFD per byte of an invalid byte-token run, the stream per
    // maximal subpart: equal when the text is clean.
    if (mode == 3 || text.find("\xEF\xBF\xBD") == std::string::npos) FUZZ_CHECK(joined == text);
  }
  return 0;
}
