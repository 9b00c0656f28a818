// The intra-op threads of a session (SessionOptions::intra_op_threads): a fixed set of workers
// that sleep on a condition variable between products and never spin, so an idle session, or
// one that runs small models whose products all stay on the calling thread, costs no CPU.
//
// One product at a time uses the workers: a Run that finds them busy (another Session::Run on
// another thread is splitting its product) runs its tasks on its own thread instead of waiting.
// Results never depend on that: the fast kernels compute every output the same way whatever the
// split (packed_gemm.h).
#ifndef IDEM_SRC_KERNELS_FAST_THREAD_POOL_H_
#define IDEM_SRC_KERNELS_FAST_THREAD_POOL_H_

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "src/kernels/fast/packed_gemm.h"

namespace idem::fast {

class ThreadPool final : public TaskRunner {
 public:
  // `threads` (>= 1) counts the calling thread: threads - 1 workers are started.
  explicit ThreadPool(int threads);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int concurrency() const override { return threads_; }
  void Run(int64_t count, void (*fn)(void* context, int64_t task), void* context) const override;

  // How many products were shared with the workers (tests: the work was split).
  uint64_t splits() const;
  // How many times a worker has woken up for a product (tests: the workers sleep).
  uint64_t wakeups() const;

 private:
  void Work();
  static void RunAll(int64_t count, void (*fn)(void*, int64_t), void* context);

  const int threads_;
  mutable std::mutex dispatch_;  // held by the Run whose product the workers share
  mutable std::mutex mu_;        // guards everything below
  mutable std::condition_variable work_cv_;
  mutable std::condition_variable done_cv_;
  mutable void (*fn_)(void*, int64_t) = nullptr;
  mutable void* context_ = nullptr;
  mutable int64_t count_ = 0;
  mutable int64_t next_ = 0;
  mutable int64_t done_ = 0;
  mutable uint64_t generation_ = 0;
  mutable uint64_t wakeups_ = 0;
  mutable uint64_t splits_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// Runs fn(begin, end) over [0, items) split into contiguous ranges: on `runner`'s threads when
// there is one with more than one thread and the work (`fmas` multiply-adds in all) is large
// enough to pay for waking a worker (kMinParallelWork), else as one call on this thread. Each
// item must be computed the same way whatever range holds it.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 21;
template <class F>
void ParallelFor(const TaskRunner* runner, int64_t items, int64_t fmas, F&& fn) {
  if (items <= 0) return;
  int64_t tasks = 1;
  if (runner != nullptr && runner->concurrency() > 1 && fmas >= kMinParallelWork) {
    tasks = std::min<int64_t>(runner->concurrency(), items);
  }
  if (tasks <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  struct Context {
    F* fn;
    int64_t items;
    int64_t tasks;
  } context{&fn, items, tasks};
  runner->Run(
      tasks,
      [](void* raw, int64_t t) {
        const Context& c = *static_cast<const Context*>(raw);
        (*c.fn)(t * c.items / c.tasks, (t + 1) * c.items / c.tasks);
      },
      &context);
}

// Scratch floats of the calling thread, slot 0..3 (distinct slots for buffers used together):
// grown when a call needs more, kept for the thread's next calls (a run after the first makes no
// allocation), freed when the thread ends. Callers bound the sizes they ask for.
float* ThreadScratch(int slot, size_t floats);

}  // namespace idem::fast

#endif  // IDEM_SRC_KERNELS_FAST_THREAD_POOL_H_
