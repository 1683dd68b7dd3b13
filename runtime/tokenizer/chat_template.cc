#include "headway/tools/chat_template.hpp"

#include <ctime>
#include <string_view>

#include "headway/tools/tokenizer.hpp"
#include "runtime/tokenizer/unicode.hpp"

namespace headway {

namespace {

// The template's text as the fingerprints read it: Jinja's "\n" escapes as newlines and double
// quotes as single ones (`norm`), and that without spaces, quotes and '+' (`squeezed`), so that
// "'<|user|>' + '\n' + message['content']" and "'<|user|>\n' + message[\"content\"]" read alike.
struct TemplateText {
  std::string norm;
  std::string squeezed;
  explicit TemplateText(const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n') {
        norm += '\n';
        ++i;
      } else {
        norm += text[i] == '"' ? '\'' : text[i];
      }
    }
    for (char c : norm) {
      if (c != ' ' && c != '\'' && c != '+') squeezed += c;
    }
  }
  bool has(std::string_view s) const { return norm.find(s) != std::string::npos; }
  bool squeezed_has(std::string_view s) const { return squeezed.find(s) != std::string::npos; }
  // The literal after `key` in the normalized text, up to the first of `ends`; empty if absent.
  std::string literal_after(std::string_view key, std::string_view ends) const {
    const size_t at = norm.find(key);
    if (at == std::string::npos) return "";
    const size_t start = at + key.size();
    const size_t end = norm.find_first_of(ends, start);
    return end == std::string::npos ? "" : norm.substr(start, end - start);
  }
};

// ChatML's own system message: a literal "'<|im_start|>system\n{text}<|im_end|>" (SmolLM2:
// "{% if loop.first and messages[0]['role'] != 'system' %}"; Qwen2.5: the else branch of
// "{% if messages[0]['role'] == 'system' %}"). A literal followed by a quote is the message's own.
std::string chatml_default_system(const TemplateText& t) {
  const std::string_view open = "'<|im_start|>system\n";
  for (size_t at = t.norm.find(open); at != std::string::npos; at = t.norm.find(open, at + 1)) {
    const size_t start = at + open.size();
    const size_t end = t.norm.find("<|im_end|>", start);
    if (end == std::string::npos || end == start) continue;
    const std::string body = t.norm.substr(start, end - start);
    if (body.find('\'') == std::string::npos && body.find('{') == std::string::npos) return body;
  }
  return "";
}

Status unknown(const char* source, const char* family) {
  return Status::error(Code::kUnsupported,
                       "%s: its chat template looks like %s but is not a variant headway recognizes (ChatML, Llama 3, "
                       "Gemma, Phi-3, Mistral: see chat_template.hpp)",
                       source, family);
}

// Jinja's trim: Python's str.strip() over code points.
std::string trimmed(const std::string& s) {
  size_t begin = 0;
  size_t end = s.size();
  uint32_t cp = 0;
  while (begin < end) {
    const size_t n = tok::utf8_next(s, begin, &cp);
    if (n == 0 || !tok::python_is_space(cp)) break;
    begin += n;
  }
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    const size_t n = tok::utf8_next(s, start, &cp);
    if (n != end - start || !tok::python_is_space(cp)) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  const size_t n = std::strftime(buf, sizeof(buf), "%d %b %Y", &local);
  return std::string(buf, n);
}

Status check_roles(const ChatTemplate& t, const std::vector<ChatMessage>& messages) {
  if (messages.empty()) return Status::error(Code::kInvalidArgument, "chat: no messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      return Status::error(Code::kInvalidArgument, "chat: message %zu has role \"%.40s\" (system, user or assistant)",
                           i, role.c_str());
    }
    if (role == "system" && i != 0) {
      return Status::error(Code::kInvalidArgument, "chat: message %zu is a system message; only the first may be", i);
    }
  }
  if (messages.back().role != "user") {
    return Status::error(Code::kInvalidArgument, "chat: the last message is the %s's; the prompt answers a user's",
                         messages.back().role.c_str());
  }
  const bool system = messages[0].role == "system";
  if (system && t.system == ChatTemplate::System::kRefused) {
    return Status::error(Code::kInvalidArgument, "chat: the model's template refuses a system message");
  }
  if (t.alternate) {
    for (size_t i = system ? 1 : 0, k = 0; i < messages.size(); ++i, ++k) {
      if ((messages[i].role == "user") != (k % 2 == 0)) {
        return Status::error(Code::kInvalidArgument,
                             "chat: message %zu is the %s's; the model's template needs user and assistant to "
                             "alternate, the user first",
                             i, messages[i].role.c_str());
      }
    }
  }
  return Status();
}

}  // namespace

Result<ChatTemplate> ChatTemplate::recognize(const std::string& text, const char* source, std::string bos_token,
                                             std::string eos_token) {
  if (text.empty()) return Status::error(Code::kNotFound, "%s: the model has no chat template", source);
  const TemplateText t(text);
  ChatTemplate c;
  c.bos_token = std::move(bos_token);
  c.eos_token = std::move(eos_token);
  c.writes_bos = t.has("bos_token");
  c.alternate = t.has("must alternate");
  if (t.has("<|im_start|>") && t.has("<|im_end|>")) {
    c.format = ChatFormat::kChatMl;
    c.default_system = chatml_default_system(t);
    return c;
  }
  if (t.has("<|start_header_id|>") && t.has("<|eot_id|>")) {
    c.format = ChatFormat::kLlama3;
    c.trim = t.squeezed_has("message[content]|trim");
    if (t.has("Cutting Knowledge Date: ")) {
      c.dated_system = true;
      c.knowledge_date = t.literal_after("Cutting Knowledge Date: ", "\n'");
      if (!t.has("strftime_now")) c.date = t.literal_after("date_string = '", "'");
      if (c.knowledge_date.empty() || (!t.has("strftime_now") && c.date.empty())) return unknown(source, "Llama 3");
    }
    return c;
  }
  if (t.has("<start_of_turn>") && t.has("<end_of_turn>")) {
    c.format = ChatFormat::kGemma;
    c.trim = t.squeezed_has("message[content]|trim");
    if (t.has("first_user_prefix")) c.system = System::kFirstUser;
    else if (t.has("System role not supported")) c.system = System::kRefused;
    else return unknown(source, "Gemma");
    return c;
  }
  if (t.has("<|end|>") && (t.has("<|user|>") || t.squeezed_has("<|message[role]|>"))) {
    c.format = ChatFormat::kPhi3;
    if (t.squeezed_has("<|message[role]|>\n")) {
      c.system = System::kTurn;
    } else if (t.squeezed_has("<|system|>\nmessage[content]<|end|>\n")) {
      c.system = t.squeezed_has("message[role]==systemandmessage[content]") ? System::kDroppedWhenEmpty : System::kTurn;
    } else if (t.squeezed_has("<|user|>\nmessage[content]<|end|>\n<|assistant|>\n")) {
      c.system = System::kDropped;
      c.assistant_after_user = true;
      return c;
    } else {
      return unknown(source, "Phi-3");
    }
    if (!t.squeezed_has("<|user|>\n") && !t.squeezed_has("<|message[role]|>\n")) return unknown(source, "Phi-3");
    if (!t.has("add_generation_prompt")) return unknown(source, "Phi-3");
    return c;
  }
  if (t.has("[INST]") && t.has("[/INST]")) {
    c.format = ChatFormat::kMistral;
    c.inst_space = t.has("'[INST] '") || t.has("'[INST] <<");
    if (t.has("system_message") && t.squeezed_has("system_message\n\nmessage[content][/INST]")) {
      c.system = System::kLastUser;
      c.assistant_space = t.has("' ' + message['content']");
      c.trim = t.squeezed_has("message[content]|trimeos_token");
    } else if (t.has("'[INST] ' + message['content'] + ' [/INST]'")) {
      c.system = System::kRefused;
      c.inst_close_space = true;
    } else {
      return unknown(source, "Mistral");
    }
    return c;
  }
  return Status::error(Code::kUnsupported,
                       "%s: its chat template is not one headway recognizes (ChatML, Llama 3, Gemma, Phi-3, Mistral: "
                       "see chat_template.hpp)",
                       source);
}

Result<ChatTemplate> ChatTemplate::of(const Tokenizer& tokenizer, const char* source, const std::string* text) {
  if (!tokenizer.loaded())
    return Status::error(Code::kFailedPrecondition, "chat template: the tokenizer is not loaded");
  const auto text_of = [&](int32_t id) {
    return id == Tokenizer::kNone ? std::string() : std::string(tokenizer.token_text(id));
  };
  return recognize(text != nullptr ? *text : std::string(tokenizer.chat_template()), source,
                   text_of(tokenizer.bos_id()), text_of(tokenizer.eos_id()));
}

Status ChatTemplate::render(const std::vector<ChatMessage>& messages, std::string* out) const {
  HEADWAY_RETURN_IF_ERROR(check_roles(*this, messages));
  out->clear();
  const bool has_system = messages[0].role == "system";
  const std::string& system_text = has_system ? messages[0].content : std::string();
  const size_t first = has_system ? 1 : 0;
  const auto content = [&](const ChatMessage& m) { return trim ? trimmed(m.content) : m.content; };
  if (writes_bos) *out += bos_token;
  switch (format) {
    case ChatFormat::kChatMl:
      if (!has_system && !default_system.empty()) *out += "<|im_start|>system\n" + default_system + "<|im_end|>\n";
      for (const ChatMessage& m : messages) *out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      *out += "<|im_start|>assistant\n";
      break;
    case ChatFormat::kLlama3:
      if (dated_system) {
        *out += "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: " + knowledge_date +
                "\nToday Date: " + (date.empty() ? today() : date) + "\n\n" + trimmed(system_text) + "<|eot_id|>";
      }
      for (size_t i = dated_system ? first : 0; i < messages.size(); ++i) {
        *out +=
            "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + content(messages[i]) + "<|eot_id|>";
      }
      *out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::kGemma:
      for (size_t i = first; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        *out += "<start_of_turn>" + std::string(m.role == "assistant" ? "model" : m.role) + "\n";
        if (i == first && has_system) *out += system_text + "\n\n";
        *out += content(m) + "<end_of_turn>\n";
      }
      *out += "<start_of_turn>model\n";
      break;
    case ChatFormat::kPhi3:
      for (const ChatMessage& m : messages) {
        if (m.role == "system" &&
            (system == System::kDropped || (system == System::kDroppedWhenEmpty && m.content.empty()))) {
          continue;
        }
        if (m.role == "assistant" && assistant_after_user) {
          *out += m.content + "<|end|>\n";
          continue;
        }
        *out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
        if (m.role == "user" && assistant_after_user) *out += "<|assistant|>\n";
      }
      if (!assistant_after_user) *out += "<|assistant|>\n";
      break;
    case ChatFormat::kMistral:
      for (size_t i = first; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user") {
          *out += inst_space ? "[INST] " : "[INST]";
          if (has_system && i + 1 == messages.size()) *out += system_text + "\n\n";
          *out += m.content + (inst_close_space ? " [/INST]" : "[/INST]");
        } else {
          if (assistant_space) *out += ' ';
          *out += content(m) + eos_token;
        }
      }
      break;
  }
  return Status();
}

}  // namespace headway
