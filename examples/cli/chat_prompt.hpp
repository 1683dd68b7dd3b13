// The chat flags `generate` and `tokenize` share: --chat wraps the text in the model's chat
// template as one user message (--system TEXT puts a system message before it), --messages FILE
// renders a whole conversation (a JSON list of {"role", "content"}), and --chat-template FILE
// uses that template text instead of the one the tokenizer's file holds. The rendered prompt is
// tokenized as transformers' apply_chat_template tokenizes it: its special tokens parsed, no
// BOS added (a template that wants one writes it).
#pragma once

#include <string>

#include "examples/cli/cli_common.hpp"
#include "headway/status.hpp"
#include "headway/tools/tokenizer.hpp"

namespace headway::cli {

struct ChatFlags {
  bool chat = false;
  const char* system = nullptr;
  const char* messages = nullptr;
  const char* template_file = nullptr;
  // When the current flag is one of the four: takes it (its value into the flags) and returns true.
  bool take(Flags* flags, Status* s);
  bool active() const { return chat || messages != nullptr; }
  // --system, --chat-template without --chat or --messages; --messages with --chat or --system.
  Status check() const;
  // The prompt: [system,] user `text` (or the --messages conversation, text == nullptr) through
  // the template; `source` names the tokenizer's file.
  Status render(const Tokenizer& tokenizer, const char* source, const std::string* text, std::string* out) const;
};

}  // namespace headway::cli
