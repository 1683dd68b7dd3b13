#include "examples/cli/chat_prompt.hpp"

#include <vector>

#include <nlohmann/json.hpp>

#include "headway/tools/chat_template.hpp"

namespace headway::cli {

namespace {

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
