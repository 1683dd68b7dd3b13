// Never linked: the object the allocator check (toolchains/cortex-m/check_no_allocator.cmake)
// must reject, so that a passing check on the firmware means something.
#include <cstdlib>

void* headway_probe_malloc(unsigned n) { return std::malloc(n); }
int* headway_probe_new() { return new int(1); }
