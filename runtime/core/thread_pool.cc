// ThreadPool over pthreadpool (the pool XNNPACK uses), or the caller alone when the build has no
// threads (HEADWAY_HAVE_PTHREADPOOL undefined: bare metal, HEADWAY_THREADS=OFF).
//
// pthreadpool's 1-D parallel loop does not tell a task which thread runs it, so per-thread
// scratch comes from a slot table instead: a task takes a free slot, runs, and gives it back.
// At most threads() tasks run at once (the caller is one of the pool's threads), so a free slot
// always exists; the search is a few atomic exchanges and never allocates.
#include "headway/thread_pool.hpp"

#ifdef HEADWAY_HAVE_PTHREADPOOL
#include <pthreadpool.h>
#endif

// ThreadSanitizer (the tsan preset) cannot see pthreadpool's hand-off to its workers and back:
// the library is not instrumented and signals with atomics and futexes. These annotations state
// those two edges (the caller's writes before run() happen before every task; every task happens
// before run() returns) and no others, so races between tasks are still reported.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define HEADWAY_TSAN_ACQUIRE(addr) __tsan_acquire(addr)
#define HEADWAY_TSAN_RELEASE(addr) __tsan_release(addr)
#else
#define HEADWAY_TSAN_ACQUIRE(addr) ((void)(addr))
#define HEADWAY_TSAN_RELEASE(addr) ((void)(addr))
#endif

namespace headway {

#ifdef HEADWAY_HAVE_PTHREADPOOL

struct ThreadPool::SlotCall {
  ThreadPool* pool;
  SlotTaskFn fn;
  void* ctx;
  TaskFn plain = nullptr;    // run(n, TaskFn): fn is unused
  char start = 0, done = 0;  // addresses for the ThreadSanitizer annotations only
};

uint32_t ThreadPool::acquire_slot() {
  for (uint32_t i = 0;; i = i + 1 < threads_ ? i + 1 : 0) {
    if (!busy_[i].load(std::memory_order_relaxed) && !busy_[i].exchange(true, std::memory_order_acquire)) {
      return i;
    }
  }
}

void ThreadPool::release_slot(uint32_t slot) { busy_[slot].store(false, std::memory_order_release); }

void ThreadPool::slot_trampoline(void* call, size_t task) {
  SlotCall* c = static_cast<SlotCall*>(call);
  HEADWAY_TSAN_ACQUIRE(&c->start);
  if (c->plain != nullptr) {
    c->plain(c->ctx, task);
  } else {
    const uint32_t slot = c->pool->acquire_slot();
    c->fn(c->ctx, slot, task);
    c->pool->release_slot(slot);
  }
  HEADWAY_TSAN_RELEASE(&c->done);
}

bool ThreadPool::threading_available() { return true; }

ThreadPool::~ThreadPool() {
  if (impl_ != nullptr) pthreadpool_destroy(static_cast<pthreadpool_t>(impl_));
}

Status ThreadPool::create(uint32_t threads) {
  if (threads == 0 || threads > kMaxThreads) {
    return Status::error(Code::kInvalidArgument, "thread pool: threads %u is not in 1..%u", threads, kMaxThreads);
  }
  if (impl_ != nullptr) pthreadpool_destroy(static_cast<pthreadpool_t>(impl_));
  impl_ = nullptr;
  threads_ = 1;
  if (threads == 1) return Status();
  pthreadpool_t pool = pthreadpool_create(threads);
  if (pool == nullptr) {
    return Status::error(Code::kInternal, "thread pool: could not start %u threads", threads);
  }
  impl_ = pool;
  threads_ = static_cast<uint32_t>(pthreadpool_get_threads_count(pool));
  return Status();
}

// No pthreadpool flags: denormal handling must be the same on the workers as on the caller, or
// results would depend on which thread ran a task.
void ThreadPool::run(size_t n_tasks, TaskFn fn, void* ctx) {
  if (impl_ == nullptr || n_tasks <= 1) {
    for (size_t t = 0; t < n_tasks; ++t) fn(ctx, t);
    return;
  }
#if defined(__SANITIZE_THREAD__)
  SlotCall call{this, nullptr, ctx, fn};
  HEADWAY_TSAN_RELEASE(&call.start);
  pthreadpool_parallelize_1d(static_cast<pthreadpool_t>(impl_), &ThreadPool::slot_trampoline, &call, n_tasks, 0);
  HEADWAY_TSAN_ACQUIRE(&call.done);
#else
  pthreadpool_parallelize_1d(static_cast<pthreadpool_t>(impl_), fn, ctx, n_tasks, 0);
#endif
}

void ThreadPool::run(size_t n_tasks, SlotTaskFn fn, void* ctx) {
  if (impl_ == nullptr || n_tasks <= 1) {
    for (size_t t = 0; t < n_tasks; ++t) fn(ctx, 0, t);
    return;
  }
  SlotCall call{this, fn, ctx};
  HEADWAY_TSAN_RELEASE(&call.start);
  pthreadpool_parallelize_1d(static_cast<pthreadpool_t>(impl_), &ThreadPool::slot_trampoline, &call, n_tasks, 0);
  HEADWAY_TSAN_ACQUIRE(&call.done);
}

#else  // no threads in this build: no atomic operation is compiled (bare-metal cores without
       // exclusive load/store would need libatomic for them)

bool ThreadPool::threading_available() { return false; }

ThreadPool::~ThreadPool() = default;

Status ThreadPool::create(uint32_t threads) {
  if (threads == 0 || threads > kMaxThreads) {
    return Status::error(Code::kInvalidArgument, "thread pool: threads %u is not in 1..%u", threads, kMaxThreads);
  }
  threads_ = 1;
  return Status();
}

void ThreadPool::run(size_t n_tasks, TaskFn fn, void* ctx) {
  for (size_t t = 0; t < n_tasks; ++t) fn(ctx, t);
}

void ThreadPool::run(size_t n_tasks, SlotTaskFn fn, void* ctx) {
  for (size_t t = 0; t < n_tasks; ++t) fn(ctx, 0, t);
}

#endif

}  // namespace headway
