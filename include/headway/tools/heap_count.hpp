// Counts heap calls in a hosted binary, to prove "no heap after init": while a HeapCount is
// alive, every malloc-family call (malloc, calloc, realloc, aligned_alloc, memalign,
// posix_memalign), every free of a non-null pointer and every operator new / delete adds one.
//
// Opt-in: only a binary that links the headway::heap_count library (headway_heap_count) has
// these functions, and linking it replaces that binary's allocation functions with counting
// ones that forward to glibc's. The core library never links it (bare metal has no allocator).
// Under AddressSanitizer or ThreadSanitizer, which own malloc, only operator new and delete are
// counted. The count is one for the whole process (all threads): a new HeapCount restarts it.
#pragma once

namespace headway {

class HeapCount {
 public:
  HeapCount();   // starts counting from 0
  ~HeapCount();  // stops
  long stop();   // stops and returns the count
  HeapCount(const HeapCount&) = delete;
  HeapCount& operator=(const HeapCount&) = delete;
};

}  // namespace headway
