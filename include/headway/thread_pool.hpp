// ThreadPool: the one small pool an edge device runs attention on. Created once at init (that
// may allocate and start threads); run() never allocates, so it is safe on the prefill/decode
// path. Builds without threads (HEADWAY_THREADS=OFF, bare metal) run every task on the caller.
// Threads: run() from several threads at once is serialized; create() may be called again, but
// not while another thread runs the pool.
//
//   headway::ThreadPool pool;
//   HEADWAY_RETURN_IF_ERROR(pool.create(4));   // init
//   pool.run(n_tasks, fn, &ctx);               // each call: fn(&ctx, 0..n_tasks-1), returns when done
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "headway/status.hpp"

namespace headway {

class ThreadPool {
 public:
  static constexpr uint32_t kMaxThreads = 256;

  // A task: `ctx` is the caller's context, `task` runs over 0..n_tasks-1 in no fixed order.
  using TaskFn = void (*)(void* ctx, size_t task);
  // A task that also gets a slot in 0..threads()-1 that no other task running at the same time
  // holds: index per-thread scratch with it.
  using SlotTaskFn = void (*)(void* ctx, uint32_t slot, size_t task);

  ThreadPool() = default;  // runs tasks on the caller until create() starts workers
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Starts threads - 1 workers (the calling thread is the remaining one). threads must be in
  // 1..kMaxThreads. Without thread support in the build, succeeds and threads() stays 1. Calling
  // it again replaces the workers.
  Status create(uint32_t threads);

  // How many threads run tasks, the caller included: the number of scratch slots run() needs.
  uint32_t threads() const { return threads_; }

  // True when this build can run tasks on more than one thread.
  static bool threading_available();

  // Runs fn(ctx, t) for every t in [0, n_tasks) and returns when all are done. Never allocates.
  // Calls from several threads at once are serialized.
  void run(size_t n_tasks, TaskFn fn, void* ctx);
  void run(size_t n_tasks, SlotTaskFn fn, void* ctx);

  // run() on `pool`, or, where pool is null, the same tasks in order on the caller (slot 0): the
  // same split either way, so the same result.
  static void run_on(ThreadPool* pool, size_t n_tasks, TaskFn fn, void* ctx) {
    if (pool != nullptr) return pool->run(n_tasks, fn, ctx);
    for (size_t t = 0; t < n_tasks; ++t) fn(ctx, t);
  }
  static void run_on(ThreadPool* pool, size_t n_tasks, SlotTaskFn fn, void* ctx) {
    if (pool != nullptr) return pool->run(n_tasks, fn, ctx);
    for (size_t t = 0; t < n_tasks; ++t) fn(ctx, 0, t);
  }

  // n items (rows, tokens) in tasks of per_task items, the last one short: how many tasks, and
  // the items [first, first + count) of task `task`.
  struct Items {
    uint32_t first;
    uint32_t count;
  };
  static constexpr size_t tasks_of(uint32_t n, uint32_t per_task) { return (size_t{n} + per_task - 1) / per_task; }
  static constexpr Items items_of(size_t task, uint32_t n, uint32_t per_task) {
    const uint32_t first = static_cast<uint32_t>(task) * per_task;
    return {first, n - first < per_task ? n - first : per_task};
  }

 private:
  uint32_t acquire_slot();
  void release_slot(uint32_t slot);
  struct SlotCall;
  static void slot_trampoline(void* call, size_t task);

  void* impl_ = nullptr;  // pthreadpool_t when workers run
  uint32_t threads_ = 1;
  std::atomic<bool> busy_[kMaxThreads] = {};
};

}  // namespace headway
