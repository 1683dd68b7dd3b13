// A program outside the headway tree: plans a preset through the installed package.
#include <cstdio>

#include <headway/plan.hpp>
#include <headway/presets.hpp>

int main() {
  const headway::Result<headway::Plan> plan = headway::make_plan(headway::presets::llama3_8b());
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.status().message());
    return 1;
  }
  std::printf("consumer: llama-3-8b kv_bytes_per_token %llu\n",
              static_cast<unsigned long long>(plan.value().kv_bytes_per_token));
  return plan.value().kv_bytes_per_token == 131072 ? 0 : 1;
}
