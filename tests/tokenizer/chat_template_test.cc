// Chat templates: each format recognized from the models' own template texts
// (tests/tokenizer/chat_templates, the same files the Hugging Face check renders with Jinja), the
// prompts they give for a system + two user turns, and every malformed conversation or unknown
// template refused with a message naming what is wrong.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "headway/tools/chat_template.hpp"

namespace {

using headway::ChatFormat;
using headway::ChatMessage;
using headway::ChatTemplate;
using headway::Code;

std::string fixture(const char* name) {
  std::ifstream f(std::string(HEADWAY_TEST_DATA) + "/../tokenizer/chat_templates/" + name);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

ChatTemplate recognized(const char* name) {
  const headway::Result<ChatTemplate> t = ChatTemplate::recognize(fixture(name), name, "<s>", "</s>");
  REQUIRE_MESSAGE(t.ok(), name, ": ", t.status().message());
  return t.value();
}

std::string rendered(const ChatTemplate& t, const std::vector<ChatMessage>& messages) {
  std::string out;
  const headway::Status s = t.render(messages, &out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return out;
}

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", " Hi "}, {"assistant", " Hello "}, {"user", "Bye"}};

}  // namespace

TEST_CASE("chat template: every format from the models' own templates") {
  CHECK(recognized("qwen2.5.jinja").default_system ==
        "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  CHECK(rendered(recognized("qwen3.jinja"), {{"user", "Hi"}}) ==
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(rendered(recognized("llama3.jinja"), kConversation) ==
        "<s><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>"
        "\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>user"
        "<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  const ChatTemplate llama31 = recognized("llama3.1.jinja");
  CHECK(llama31.dated_system);
  CHECK(llama31.knowledge_date == "December 2023");
  CHECK(llama31.date == "26 Jul 2024");
  CHECK(rendered(llama31, {{"user", "Hi"}}) ==
        "<s><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul "
        "2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant"
        "<|end_header_id|>\n\n");
  CHECK(recognized("llama3.2.jinja").date.empty());  // today's, through strftime_now
  CHECK(rendered(recognized("gemma3.jinja"), kConversation) ==
        "<s><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  CHECK(recognized("gemma2.jinja").system == ChatTemplate::System::kRefused);
  CHECK(rendered(recognized("phi3-mini.jinja"), kConversation) ==
        "<s><|user|>\n Hi <|end|>\n<|assistant|>\n Hello <|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n");
  CHECK(rendered(recognized("phi3.5.jinja"), {{"system", ""}, {"user", "Hi"}}) ==
        "<|user|>\nHi<|end|>\n<|assistant|>\n");
  CHECK(rendered(recognized("phi3-small.jinja"), {{"system", ""}, {"user", "Hi"}}) ==
        "<s><|system|>\n<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n");
  CHECK(rendered(recognized("mistral-v0.1.jinja"), {{"user", "Hi"}, {"assistant", "Yo"}, {"user", "Q"}}) ==
        "<s>[INST] Hi [/INST]Yo</s>[INST] Q [/INST]");
  CHECK(rendered(recognized("mistral-v0.3.jinja"), kConversation) ==
        "<s>[INST]  Hi [/INST] Hello</s>[INST] Be brief.\n\nBye[/INST]");
  CHECK(rendered(recognized("mistral-nemo.jinja"), kConversation) ==
        "<s>[INST] Hi [/INST] Hello </s>[INST]Be brief.\n\nBye[/INST]");
  for (const char* name : {"qwen2.5.jinja", "qwen3.jinja"}) CHECK(recognized(name).format == ChatFormat::kChatMl);
}

TEST_CASE("chat template: malformed conversations are refused, naming the message") {
  const ChatTemplate chatml = recognized("qwen3.jinja");
  const ChatTemplate gemma2 = recognized("gemma2.jinja");
  struct Case {
    const ChatTemplate* t;
    std::vector<ChatMessage> messages;
    const char* says;
  } const cases[] = {
      {&chatml, {}, "chat: no messages"},
      {&chatml, {{"tool", "x"}, {"user", "hi"}}, "message 0 has role \"tool\""},
      {&chatml, {{"user", "hi"}, {"system", "x"}, {"user", "hi"}}, "message 1 is a system message; only the first"},
      {&chatml, {{"user", "hi"}, {"assistant", "yo"}}, "the last message is the assistant's"},
      {&gemma2, {{"system", "x"}, {"user", "hi"}}, "refuses a system message"},
      {&gemma2,
       {{"user", "a"}, {"user", "b"}},
       "message 1 is the user's; the model's template needs user and assistant"},
  };
  for (const Case& c : cases) {
    std::string out = "unchanged";
    const headway::Status s = c.t->render(c.messages, &out);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(std::string(s.message()).find(c.says) != std::string::npos, s.message());
    CHECK(out == "unchanged");
  }
}

TEST_CASE("chat template: unknown templates and variants name their source") {
  const headway::Result<ChatTemplate> none = ChatTemplate::recognize("", "model.gguf");
  CHECK(none.status().code() == Code::kNotFound);
  CHECK(std::string(none.status().message()) == "model.gguf: the model has no chat template");
  const headway::Result<ChatTemplate> other =
      ChatTemplate::recognize("{% for m in messages %}### {{ m.content }}{% endfor %}", "other.jinja");
  CHECK(other.status().code() == Code::kUnsupported);
  CHECK(std::string(other.status().message()).find("other.jinja: its chat template is not one headway recognizes") ==
        0);
  for (const char* variant :
       {"{{ '<start_of_turn>' + m + '<end_of_turn>' }}", "{{ '[INST]' + m + '[/INST]' }}",
        "{{ '<|user|>' + m + '<|end|>' }}", "{{ 'Cutting Knowledge Date: ' }}<|start_header_id|><|eot_id|>"}) {
    const headway::Result<ChatTemplate> t = ChatTemplate::recognize(variant, "v.jinja");
    CHECK(t.status().code() == Code::kUnsupported);
    CHECK_MESSAGE(std::string(t.status().message()).find("is not a variant headway recognizes") != std::string::npos,
                  t.status().message());
  }
}
