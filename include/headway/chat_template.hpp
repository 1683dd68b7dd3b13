// Chat templates: a list of messages rendered into the prompt text a model was trained on, with
// the generation prompt after it, as transformers' apply_chat_template(add_generation_prompt=True)
// renders the model's own Jinja template. headway recognizes templates by their text rather than
// running Jinja; a template it does not recognize is an error naming where it came from.
//
//   ChatML (SmolLM2, Qwen, ...): "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
//   "<|im_start|>assistant\n"; where the template writes a default system message when the
//   first message is not a system one (SmolLM2), that message first.
// Part of the hosted tools layer.
#pragma once

#include <string>
#include <vector>

#include "headway/status.hpp"

namespace headway {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

enum class ChatFormat : uint8_t { kChatMl = 0 };

struct ChatTemplate {
  ChatFormat format = ChatFormat::kChatMl;
  std::string default_system;  // written first when the first message is not a system one; empty: none

  // Recognizes `text` (a GGUF's tokenizer.chat_template, a tokenizer_config.json's
  // chat_template); `source` names it in the error for a template headway does not know.
  static Result<ChatTemplate> recognize(const std::string& text, const char* source);
  // The messages and the generation prompt, as the template renders them.
  std::string render(const std::vector<ChatMessage>& messages) const;
};

}  // namespace headway
