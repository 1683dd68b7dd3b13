#include "examples/cli/chat_prompt.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "headway/chat_template.hpp"

namespace headway::cli {

namespace {

constexpr size_t kMaxTextFile = size_t{64} << 20;

// --messages FILE: [{"role": "system" | "user" | "assistant", "content": "..."}, ...].
Status read_messages(const char* path, std::vector<ChatMessage>* out) {
  std::string bytes;
  HEADWAY_RETURN_IF_ERROR(read_text_file("--messages", path, &bytes));
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    return Status::error(Code::kInvalidArgument, "--messages %s: not a JSON list of {\"role\", \"content\"}", path);
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& m = j[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return Status::error(Code::kInvalidArgument,
                           "--messages %s: message %zu is not {\"role\": \"...\", "
                           "\"content\": \"...\"}",
                           path, i);
    }
    out->push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return Status();
}

}  // namespace

Status read_text_file(const char* flag, const char* path, std::string* out) {
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

bool ChatFlags::take(Flags* flags, Status* s) {
  const std::string& n = flags->name();
  if (n == "--chat" && !flags->has_inline_value()) chat = true;
  else if (n == "--system") *s = flags->value(&system);
  else if (n == "--messages") *s = flags->value(&messages);
  else if (n == "--chat-template") *s = flags->value(&template_file);
  else return false;
  return true;
}

Status ChatFlags::check() const {
  if (messages != nullptr && (chat || system != nullptr)) {
    return Status::error(Code::kInvalidArgument,
                         "--messages FILE is the whole conversation: give it without --chat and --system");
  }
  if (!active() && (system != nullptr || template_file != nullptr)) {
    return Status::error(Code::kInvalidArgument, "--system and --chat-template go with --chat or --messages");
  }
  return Status();
}

Status ChatFlags::render(const Tokenizer& tokenizer, const char* source, const std::string* text,
                         std::string* out) const {
  std::vector<ChatMessage> conversation;
  if (messages != nullptr) {
    HEADWAY_RETURN_IF_ERROR(read_messages(messages, &conversation));
  } else {
    if (system != nullptr) conversation.push_back({"system", system});
    conversation.push_back({"user", *text});
  }
  std::string own;
  if (template_file != nullptr) HEADWAY_RETURN_IF_ERROR(read_text_file("--chat-template", template_file, &own));
  const Result<ChatTemplate> t = ChatTemplate::of(tokenizer, template_file != nullptr ? template_file : source,
                                                  template_file != nullptr ? &own : nullptr);
  if (!t.ok()) return t.status();
  return t.value().render(conversation, out);
}

}  // namespace headway::cli
