// Counts operator new calls (every form) in a test binary while a NewCount is alive; malloc is
// not counted. For the binaries that load a Vulkan driver: the driver may malloc inside command
// recording and submission, which headway does not control, while headway's own code allocates
// through new (or not at all). Link tests/gpu/new_counter.cc into the binary; it replaces operator
// new and delete, so it cannot share a binary with the headway::heap_count library.
#pragma once

namespace headway {
namespace test {

class NewCount {
 public:
  NewCount();   // starts counting from 0
  ~NewCount();  // stops
  long stop();  // stops and returns the count
  NewCount(const NewCount&) = delete;
  NewCount& operator=(const NewCount&) = delete;
};

}  // namespace test
}  // namespace headway
