// `headway doctor`: what this build holds and what it finds on this machine, one fact a line, for a
// bug report: the version, the compiler, the SIMD targets compiled and the one this CPU runs,
// XNNPACK, the Vulkan device, the Python module.
#include <cstdio>
#include <cstring>
#include <thread>

#include <unistd.h>

#include "examples/cli/cli_common.hpp"
#include "examples/cli/commands.hpp"
#include "headway/backend.hpp"
#include "headway/build_info.hpp"
#include "headway/headway.h"

namespace headway::cli {

namespace {

const char* compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown";
#endif
}

// The first line python3 prints importing the module (its version and file), or "" where it
// cannot. pythonpath, when not empty, goes first on PYTHONPATH: a build tree's module, which is
// not installed.
void python_module(const char* pythonpath, char* out, size_t n) {
  out[0] = '\0';
  char command[1024];
  std::snprintf(command, sizeof(command),
                "%s%s%spython3 -c 'import headway; print(headway.__version__, \"at\", headway.__file__)' 2>/dev/null",
                pythonpath[0] != '\0' ? "PYTHONPATH='" : "", pythonpath, pythonpath[0] != '\0' ? "' " : "");
  std::FILE* p = popen(command, "r");
  if (p == nullptr) return;
  if (std::fgets(out, static_cast<int>(n), p) == nullptr) out[0] = '\0';
  out[std::strcspn(out, "\n")] = '\0';
  if (pclose(p) != 0) out[0] = '\0';
}

// <the folder of this executable>/../python: where a build tree puts the module
// (build/release/bin/headway beside build/release/python); "" where it is not there or the path
// holds a quote.
void build_tree_python(char* out, size_t n) {
  out[0] = '\0';
  char exe[400];  // with "/../python", less than the caller's 512 bytes
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return;
  exe[len] = '\0';
  char* slash = std::strrchr(exe, '/');
  if (slash == nullptr || std::strchr(exe, '\'') != nullptr) return;
  *slash = '\0';
  std::snprintf(out, n, "%s/../python", exe);
  if (access(out, R_OK) != 0) out[0] = '\0';
}

}  // namespace

int cmd_doctor(int argc, char** argv) {
  Flags flags("doctor", argc, argv);
  while (flags.next()) return report("doctor", flags.unknown());
  std::printf("headway %s\n", headway_version());
  std::printf("compiler: %s, C++ %ld\n", compiler(), static_cast<long>(__cplusplus));
  std::printf("simd: kernels run %s on this CPU\n", kernel_target_name());
  std::printf("  compiled: %s\n", kernel_compiled_targets());
  std::printf("  this cpu: %s\n", cpu_simd_targets());
  std::printf("threads: %u hardware threads\n", std::thread::hardware_concurrency());
  std::printf("xnnpack: %s\n", built_with_xnnpack() ? "built in (--projection xnnpack)" : "not in this build");
  if (!GpuContext::compiled()) {
    std::printf("gpu: not in this build (HEADWAY_GPU needs the Vulkan loader and glslc)\n");
  } else {
    GpuContext gpu;
    const Status s = gpu.create();
    if (s.ok()) {
      std::printf("gpu: %s (%s, Vulkan %u.%u, %s K/V storage)\n", gpu.info().name, gpu.info().type,
                  gpu.info().api_version >> 22 & 0x7f, gpu.info().api_version >> 12 & 0x3ff,
                  gpu.info().storage_16bit ? "16-bit" : "32-bit");
    } else {
      std::printf("gpu: built in, no usable device: %s\n", s.message());
    }
  }
  char python[512];
  python_module("", python, sizeof(python));
  char tree[512];
  if (python[0] == '\0') {
    build_tree_python(tree, sizeof(tree));
    if (tree[0] != '\0') python_module(tree, python, sizeof(python));
  }
  if (python[0] != '\0') {
    std::printf("python: headway %s\n", python);
  } else {
    std::printf("python: python3 cannot import headway (pip install . at the repo root builds it)\n");
  }
  return kExitOk;
}

}  // namespace headway::cli
