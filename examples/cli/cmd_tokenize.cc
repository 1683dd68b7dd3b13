// headway tokenize: text to ids and ids to text with a model file's own tokenizer.
//
//   headway tokenize (--gguf FILE | --tokenizer tokenizer.json | --model-dir DIR)
//                    (--text T | --text-file F | --ids 1,2,3 | --messages FILE) [--json]
//                    [--chat [--system S]] [--chat-template FILE]
//                    [--no-add-special] [--no-parse-special] [--keep-special]
//
// --json prints {"ids": [...]} for text and {"text": "..."} for ids. --chat renders the text as a
// user message through the file's chat template (chat_prompt.hpp) and tokenizes the prompt as
// transformers' apply_chat_template does; --json then adds "prompt", the rendered text.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/cli/chat_prompt.hpp"
#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/tools/tokenizer.hpp"

namespace headway::cli {
namespace {

// "1,2,3" → ids; each a whole number below 2^31.
Status parse_ids(const char* text, std::vector<int32_t>* ids) {
  const char* p = text;
  while (*p != '\0') {
    const char* start = p;
    while (*p == ' ') ++p;
    if (*p < '0' || *p > '9') {
      return Status::error(Code::kInvalidArgument, "--ids '%.80s': '%.20s' is not a token id (ids are 0, 1, 2, ...)",
                           text, start);
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(p, &end, 10);
    if (errno != 0 || v > 0x7fffffffull) {
      return Status::error(Code::kInvalidArgument, "--ids '%.80s': %.20s is too large for a token id", text, start);
    }
    ids->push_back(static_cast<int32_t>(v));
    p = end;
    while (*p == ' ') ++p;
    if (*p == ',') {
      ++p;
      if (*p == '\0') return Status::error(Code::kInvalidArgument, "--ids '%.80s' ends with a comma", text);
    } else if (*p != '\0') {
      return Status::error(Code::kInvalidArgument, "--ids '%.80s': expected a comma at '%.20s'", text, p);
    }
  }
  return Status();
}

void print_json_string(const std::string& s) {
  std::putchar('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"') std::fputs("\\\"", stdout);
    else if (c == '\\') std::fputs("\\\\", stdout);
    else if (c == '\n') std::fputs("\\n", stdout);
    else if (c == '\r') std::fputs("\\r", stdout);
    else if (c == '\t') std::fputs("\\t", stdout);
    else if (u < 0x20 || u == 0x7f) std::printf("\\u%04x", u);
    else std::putchar(c);
  }
  std::putchar('"');
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Flags flags("tokenize", argc, argv);
  const char* gguf = nullptr;
  const char* tokenizer_json = nullptr;
  const char* model_dir = nullptr;
  const char* text = nullptr;
  const char* text_file = nullptr;
  const char* ids_text = nullptr;
  bool json = false;
  EncodeOptions encode_options;
  DecodeOptions decode_options;
  ChatFlags chat;
  while (flags.next()) {
    const std::string& f = flags.name();
    Status s;
    if (chat.take(&flags, &s)) {
    } else if (f == "--gguf") {
      s = flags.value(&gguf);
    } else if (f == "--tokenizer") {
      s = flags.value(&tokenizer_json);
    } else if (f == "--model-dir") {
      s = flags.value(&model_dir);
    } else if (f == "--text") {
      s = flags.value(&text);
    } else if (f == "--text-file") {
      s = flags.value(&text_file);
    } else if (f == "--ids") {
      s = flags.value(&ids_text);
    } else if (f == "--json" && !flags.has_inline_value()) {
      json = true;
    } else if (f == "--no-add-special" && !flags.has_inline_value()) {
      encode_options.add_special = false;
    } else if (f == "--no-parse-special" && !flags.has_inline_value()) {
      encode_options.parse_special = false;
    } else if (f == "--keep-special" && !flags.has_inline_value()) {
      decode_options.skip_special = false;
    } else {
      s = flags.unknown();
    }
    if (!s.ok()) return report("tokenize", s);
  }
  const int sources = (gguf != nullptr) + (tokenizer_json != nullptr) + (model_dir != nullptr);
  if (sources != 1) {
    return report("tokenize", Status::error(Code::kInvalidArgument,
                                            "give one of --gguf FILE, --tokenizer tokenizer.json, --model-dir DIR "
                                            "(%d given)",
                                            sources));
  }
  const int inputs = (text != nullptr) + (text_file != nullptr) + (ids_text != nullptr) + (chat.messages != nullptr);
  if (inputs != 1) {
    return report(
        "tokenize",
        Status::error(Code::kInvalidArgument,
                      "give one of --text T, --text-file F, --ids 1,2,3, --messages FILE (%d given)", inputs));
  }
  if (const Status s = chat.check(); !s.ok()) return report("tokenize", s);
  if (chat.chat && ids_text != nullptr) {
    return report("tokenize", Status::error(Code::kInvalidArgument, "--chat renders text: give --text or --text-file"));
  }
  std::vector<int32_t> ids;
  if (ids_text != nullptr) {
    const Status s = parse_ids(ids_text, &ids);
    if (!s.ok()) return report("tokenize", s);
  }
  Result<Tokenizer> loaded = gguf != nullptr             ? Tokenizer::from_gguf(gguf)
                             : tokenizer_json != nullptr ? Tokenizer::from_tokenizer_json(tokenizer_json)
                                                         : Tokenizer::from_model_dir(model_dir);
  if (!loaded.ok()) return report("tokenize", loaded.status());
  Tokenizer& tokenizer = loaded.value();

  if (ids_text != nullptr) {
    std::string out;
    const Status s = tokenizer.decode(ids.data(), ids.size(), &out, decode_options);
    if (!s.ok()) return report("tokenize", Status::error(s.code(), "--ids: %s", s.message()));
    if (json) {
      std::fputs("{\"text\": ", stdout);
      print_json_string(out);
      std::fputs("}\n", stdout);
    } else {
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::putchar('\n');
    }
    return kExitOk;
  }
  std::string input;
  if (text_file != nullptr) {
    const Status s = read_text_file("--text-file", text_file, &input);
    if (!s.ok()) return report("tokenize", s);
  } else if (text != nullptr) {
    input = text;
  }
  if (chat.active()) {
    std::string prompt;
    const char* source = gguf != nullptr ? gguf : tokenizer_json != nullptr ? tokenizer_json : model_dir;
    const Status s = chat.render(tokenizer, source, chat.messages != nullptr ? nullptr : &input, &prompt);
    if (!s.ok()) return report("tokenize", s);
    input = std::move(prompt);
    encode_options.add_special = false;
  }
  const Status s = tokenizer.encode(input, &ids, encode_options);
  if (!s.ok()) return report("tokenize", s);
  if (json) {
    std::fputs("{\"ids\": [", stdout);
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? ", %d" : "%d", ids[i]);
    std::fputs("]", stdout);
    if (chat.active()) {
      std::fputs(", \"prompt\": ", stdout);
      print_json_string(input);
    }
    std::fputs("}\n", stdout);
  } else {
    std::printf("%zu tokens:", ids.size());
    for (int32_t id : ids) std::printf(" %d", id);
    std::putchar('\n');
  }
  return kExitOk;
}

}  // namespace headway::cli
