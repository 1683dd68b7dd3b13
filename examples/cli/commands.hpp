// The subcommands of the `headway` tool. Each takes argv without the program name (argv[0] is
// the subcommand) and returns the exit status: 0 done, 2 bad input, 1 internal fault.
#pragma once

namespace headway::cli {

int cmd_presets(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_attend(int argc, char** argv);
int cmd_layer(int argc, char** argv);
int cmd_bench(int argc, char** argv);  // bench/command/bench_command.cc (headway::bench_command)
int cmd_run(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_doctor(int argc, char** argv);

}  // namespace headway::cli
