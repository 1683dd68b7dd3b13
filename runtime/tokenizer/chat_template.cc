#include "headway/chat_template.hpp"

namespace headway {

namespace {

constexpr const char* kImStart = "<|im_start|>";
constexpr const char* kImEnd = "<|im_end|>";

// The literal system message a ChatML template writes when messages[0] is not a system one:
// "{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n...<|im_end|>\n' }}".
std::string default_system_of(const std::string& t) {
  const size_t cond = t.find("messages[0]['role'] != 'system'");
  if (cond == std::string::npos) return "";
  const std::string open = std::string("'") + kImStart + "system\n";
  const size_t start = t.find(open, cond);
  if (start == std::string::npos) return "";
  const size_t end = t.find(kImEnd, start + open.size());
  if (end == std::string::npos) return "";
  return t.substr(start + open.size(), end - start - open.size());
}

}  // namespace

Result<ChatTemplate> ChatTemplate::recognize(const std::string& text, const char* source) {
  if (text.find(kImStart) != std::string::npos && text.find(kImEnd) != std::string::npos) {
    ChatTemplate t;
    t.format = ChatFormat::kChatMl;
    t.default_system = default_system_of(text);
    return t;
  }
  if (text.empty()) return Status::error(Code::kNotFound, "%s: the model has no chat template", source);
  return Status::error(Code::kUnsupported,
                       "%s: its chat template is not one headway recognizes (ChatML: <|im_start|> ... <|im_end|>)",
                       source);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages) const {
  std::string out;
  if (!default_system.empty() && !messages.empty() && messages[0].role != "system") {
    out += std::string(kImStart) + "system\n" + default_system + kImEnd + "\n";
  }
  for (const ChatMessage& m : messages) out += std::string(kImStart) + m.role + "\n" + m.content + kImEnd + "\n";
  out += std::string(kImStart) + "assistant\n";
  return out;
}

}  // namespace headway
