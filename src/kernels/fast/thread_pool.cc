#include "src/kernels/fast/thread_pool.h"

#include <array>
#include <memory>
#include <new>

namespace idem::fast {

ThreadPool::ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { Work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

uint64_t ThreadPool::splits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return splits_;
}

uint64_t ThreadPool::wakeups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wakeups_;
}

void ThreadPool::RunAll(int64_t count, void (*fn)(void*, int64_t), void* context) {
  for (int64_t t = 0; t < count; ++t) fn(context, t);
}

void ThreadPool::Run(int64_t count, void (*fn)(void*, int64_t), void* context) const {
  if (count <= 0) return;
  if (count == 1 || workers_.empty()) return RunAll(count, fn, context);
  std::unique_lock<std::mutex> dispatch(dispatch_, std::try_to_lock);
  if (!dispatch.owns_lock()) return RunAll(count, fn, context);  // busy: no waiting
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = fn;
  context_ = context;
  count_ = count;
  next_ = 0;
  done_ = 0;
  ++generation_;
  ++splits_;
  work_cv_.notify_all();
  // The caller takes tasks too; whoever finishes the last one wakes the caller.
  while (next_ < count_) {
    const int64_t t = next_++;
    lock.unlock();
    fn(context, t);
    lock.lock();
    ++done_;
  }
  done_cv_.wait(lock, [&] { return done_ == count_; });
  fn_ = nullptr;
  context_ = nullptr;
}

void ThreadPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t seen = 0;
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++wakeups_;
    while (next_ < count_) {
      const int64_t t = next_++;
      void (*fn)(void*, int64_t) = fn_;
      void* context = context_;
      lock.unlock();
      fn(context, t);
      lock.lock();
      if (++done_ == count_) done_cv_.notify_all();
    }
  }
}

float* ThreadScratch(int slot, size_t floats) {
  struct Buffer {
    std::unique_ptr<float[], void (*)(float*)> data{
        nullptr, [](float* p) { ::operator delete[](p, std::align_val_t{64}); }};
    size_t size = 0;
  };
  thread_local std::array<Buffer, 4> buffers;
  Buffer& b = buffers[static_cast<size_t>(slot)];
  if (b.size < floats || b.data == nullptr) {
    const size_t size = std::max<size_t>(floats, 16);
    b.data.reset(static_cast<float*>(::operator new[](size * sizeof(float), std::align_val_t{64})));
    b.size = size;
  }
  return b.data.get();
}

}  // namespace idem::fast
