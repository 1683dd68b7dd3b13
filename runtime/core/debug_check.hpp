// What a trusted path takes on faith, checked again in debug builds. A call is checked once, where
// it enters (Session, Model, AttentionLayer::forward, KvCache::append and attend, the backends'
// methods); what it runs then (a layer's forward_unchecked, the backends' and the cache's
// *_unchecked, the prepared attention) trusts its arguments. A build without NDEBUG re-runs the
// skipped check at each trusted step and stops the process with its message where it fails: a hole
// in the boundary's checks, never bad input. Release builds compile the checks out.
#pragma once

#include "headway/status.hpp"

#ifdef NDEBUG
#define HEADWAY_DEBUG_CHECK(status_expr) static_cast<void>(0)
#else
#include <cstdio>
#include <cstdlib>
#define HEADWAY_DEBUG_CHECK(status_expr)                                                          \
  do {                                                                                            \
    const ::headway::Status headway_debug_status_ = (status_expr);                                \
    if (!headway_debug_status_.ok()) {                                                            \
      std::fprintf(stderr, "%s:%d: a trusted call fails its own check: %s\n", __FILE__, __LINE__, \
                   headway_debug_status_.message());                                              \
      std::abort();                                                                               \
    }                                                                                             \
  } while (0)
#endif
