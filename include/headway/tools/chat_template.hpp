// Chat templates: a list of messages rendered into the prompt text a model was trained on, with
// the generation prompt after it, as transformers' apply_chat_template(add_generation_prompt=True)
// renders the model's own Jinja template. headway recognizes the common templates by their text
// rather than running Jinja; a template it does not recognize is an error naming where it came
// from. Per format, for system/user/assistant turns (content|trim where the template trims):
//
//   ChatML (SmolLM2, Qwen2.5, Qwen3): "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
//     "<|im_start|>assistant\n"; a template that writes a system message of its own when the first
//     message is not a system one (SmolLM2, Qwen2.5) writes that first.
//   Llama 3: BOS, "<|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>" per
//     message, then the assistant header. Llama 3.1-3.3 open with a system turn that always holds
//     "Cutting Knowledge Date: ...\nToday Date: {date}\n\n" and then the system message; the date
//     is today's where the template asks strftime_now, else the template's own date_string.
//   Gemma: "<start_of_turn>{user|model}\n{content|trim}<end_of_turn>\n", then
//     "<start_of_turn>model\n"; Gemma 3 writes a system message before the first user turn's
//     content (with "\n\n"), Gemma 1 and 2 refuse one. Roles must alternate.
//   Phi-3: "<|{role}|>\n{content}<|end|>\n", then "<|assistant|>\n" (Phi-3-small, Phi-3.5: the
//     system message too, Phi-3.5 not when empty); Phi-3-mini's first template drops the system
//     message and writes "<|assistant|>\n" after every user turn.
//   Mistral: "[INST] {content} [/INST]" and "{content}</s>" (v0.1/v0.2: no system message); v0.3
//     and Nemo: the system message before the last user message's content (with "\n\n"),
//     "[INST] {content}[/INST]" and " {content|trim}</s>" (v0.3) or "[INST]{content}[/INST]"
//     and "{content}</s>" (Nemo). Roles must alternate.
//
// Messages: an optional system message first, then user and assistant messages, the last one the
// user's (the generation prompt answers it). Anything else is an error naming the message.
// Part of the hosted tools layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headway/status.hpp"

namespace headway {

class Tokenizer;

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

enum class ChatFormat : uint8_t { kChatMl = 0, kLlama3, kGemma, kPhi3, kMistral };

struct ChatTemplate {
  ChatFormat format = ChatFormat::kChatMl;
  std::string bos_token;       // the tokenizer's BOS text, where the template writes bos_token
  std::string eos_token;       // its EOS text, where the template writes eos_token
  bool writes_bos = false;     // the template starts with bos_token
  bool trim = false;           // contents are written |trim (Python's str.strip())
  bool alternate = false;      // the template raises unless user and assistant alternate
  std::string default_system;  // ChatML: written when the first message is not a system one
  // Llama 3.1+: the dated system turn ("Cutting Knowledge Date: {knowledge}\nToday Date: {date}").
  bool dated_system = false;
  std::string knowledge_date;
  std::string date;  // empty: today's, as strftime("%d %b %Y")
  // Gemma: where a system message goes. Phi-3 and Mistral use these too (see the header).
  enum class System : uint8_t {
    kTurn,
    kRefused,
    kDropped,
    kDroppedWhenEmpty,
    kFirstUser,
    kLastUser
  } system = System::kTurn;
  bool assistant_after_user = false;  // Phi-3-mini's first template: no generation prompt of its own
  bool inst_space = false;            // Mistral: "[INST] " rather than "[INST]"
  bool inst_close_space = false;      // Mistral v0.1/v0.2: " [/INST]"
  bool assistant_space = false;       // Mistral v0.3: " " before the assistant's content

  // Recognizes `text` (a GGUF's tokenizer.chat_template, a tokenizer_config.json's
  // chat_template); `source` names it in the error for a template headway does not know.
  // bos_token / eos_token: the texts the template's bos_token and eos_token stand for.
  static Result<ChatTemplate> recognize(const std::string& text, const char* source, std::string bos_token = "",
                                        std::string eos_token = "");
  // The tokenizer's own template (Tokenizer::chat_template), or `text` when given, with the
  // tokenizer's BOS and EOS texts; `source` names the template's file in errors.
  static Result<ChatTemplate> of(const Tokenizer& tokenizer, const char* source, const std::string* text = nullptr);
  // The messages and the generation prompt, as the template renders them, into *out.
  Status render(const std::vector<ChatMessage>& messages, std::string* out) const;
};

}  // namespace headway
