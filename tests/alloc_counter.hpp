// Counts heap allocations in a test binary: every malloc-family call and every operator new /
// delete goes through counting versions while an AllocationCount is alive. Link
// tests/alloc_counter.cc into the binary. Under AddressSanitizer, which owns malloc, only
// operator new and delete are counted.
#pragma once

namespace headway {
namespace test {

class AllocationCount {
 public:
  AllocationCount();   // starts counting from 0
  ~AllocationCount();  // stops
  long stop();         // stops and returns the count
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;
};

}  // namespace test
}  // namespace headway
