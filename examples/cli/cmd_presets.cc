#include <cstdio>
#include <cstring>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/presets.hpp"

namespace headway::cli {

int cmd_presets(int argc, char** argv) {
  Flags flags("presets", argc, argv);
  while (flags.next()) return report("presets", flags.unknown());
  size_t n = 0;
  const presets::Entry* all = presets::all(&n);
  std::printf("%-16s %8s %6s %8s %8s %8s %7s  %s\n", "name", "d_model", "heads", "kv_heads", "head_dim", "ctx",
              "layers", "attention");
  for (size_t i = 0; i < n; ++i) {
    const Config c = all[i].make();
    std::printf("%-16s %8u %6u %8u %8u %8u %7u  %s\n", all[i].name, c.d_model, c.n_heads, c.kv_heads(), c.head_size(),
                c.max_seq, c.n_layers, all[i].note);
  }
  return kExitOk;
}

}  // namespace headway::cli
