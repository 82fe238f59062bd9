// ThreadSanitizer build only (SHARDPLAN_TSAN): tells TSan about absl::Mutex.
//
// Debian's Abseil is a prebuilt, uninstrumented shared library, so TSan cannot
// see the acquire/release that absl::Mutex performs with its own atomics and
// futexes, and would report every access guarded by an absl::Mutex as a race.
// Abseil annotates its mutex for TSan only when Abseil itself is compiled with
// -fsanitize=thread. This file defines the public locking entry points in the
// test executable, which interposes the library's (the executable's definition
// wins in the dynamic symbol lookup, also for calls from libgrpc and from
// inside Abseil), and wraps the real function (dlsym RTLD_NEXT) in the same
// __tsan_mutex_* annotations Abseil's own TSan build uses. Nothing here
// changes the behaviour of a lock; it only makes its happens-before edges
// visible.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace {

template <typename F>
F Real(const char* mangled) {
  void* fn = dlsym(RTLD_NEXT, mangled);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan absl shim: %s not found\n", mangled);
    std::abort();
  }
  return reinterpret_cast<F>(fn);
}

// Only the outermost shim call annotates: some entry points call others
// through the PLT (CondVar::WaitWithTimeout -> WaitWithDeadline), which come
// back here.
thread_local int shim_depth = 0;
struct Depth {
  Depth() { ++shim_depth; }
  ~Depth() { --shim_depth; }
  bool outermost() const { return shim_depth == 1; }
};

#define SHIM_REAL(type, mangled)                \
  static const auto real = Real<type>(mangled); \
  const Depth depth;                            \
  const bool annotate = depth.outermost()

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  SHIM_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex4LockEv");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  real(this);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLock() {
  SHIM_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex10ReaderLockEv");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  if (annotate) __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::TryLock() {
  SHIM_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex7TryLockEv");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  if (annotate)
    __tsan_mutex_post_lock(
        this,
        __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

bool Mutex::ReaderTryLock() {
  SHIM_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex13ReaderTryLockEv");
  if (annotate) __tsan_mutex_pre_lock(this, __tsan_mutex_try_read_lock);
  const bool locked = real(this);
  if (annotate)
    __tsan_mutex_post_lock(
        this,
        locked ? __tsan_mutex_try_read_lock : __tsan_mutex_try_read_lock_failed,
        0);
  return locked;
}

void Mutex::Unlock() {
  SHIM_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex6UnlockEv");
  if (annotate) __tsan_mutex_pre_unlock(this, 0);
  real(this);
  if (annotate) __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() {
  SHIM_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  if (annotate) __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  if (annotate) __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

void Mutex::LockWhen(const Condition& cond) {
  SHIM_REAL(void (*)(Mutex*, const Condition&),
            "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  real(this, cond);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  SHIM_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
            "_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_"
            "8DurationE");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  const bool result = real(this, cond, timeout);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
  return result;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  SHIM_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
            "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_"
            "4TimeE");
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  const bool result = real(this, cond, deadline);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
  return result;
}

// Await: the mutex is released while waiting and held again on return.
void Mutex::Await(const Condition& cond) {
  SHIM_REAL(void (*)(Mutex*, const Condition&),
            "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
  if (annotate) __tsan_mutex_pre_unlock(this, 0);
  if (annotate) __tsan_mutex_post_unlock(this, 0);
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  real(this, cond);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  SHIM_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
            "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_"
            "8DurationE");
  if (annotate) __tsan_mutex_pre_unlock(this, 0);
  if (annotate) __tsan_mutex_post_unlock(this, 0);
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  const bool result = real(this, cond, timeout);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
  return result;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  SHIM_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
            "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_"
            "4TimeE");
  if (annotate) __tsan_mutex_pre_unlock(this, 0);
  if (annotate) __tsan_mutex_post_unlock(this, 0);
  if (annotate) __tsan_mutex_pre_lock(this, 0);
  const bool result = real(this, cond, deadline);
  if (annotate) __tsan_mutex_post_lock(this, 0, 0);
  return result;
}

void CondVar::Wait(Mutex* mu) {
  SHIM_REAL(void (*)(CondVar*, Mutex*),
            "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  if (annotate) __tsan_mutex_pre_unlock(mu, 0);
  if (annotate) __tsan_mutex_post_unlock(mu, 0);
  if (annotate) __tsan_mutex_pre_lock(mu, 0);
  real(this, mu);
  if (annotate) __tsan_mutex_post_lock(mu, 0, 0);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  SHIM_REAL(bool (*)(CondVar*, Mutex*, absl::Duration),
            "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_"
            "8DurationE");
  if (annotate) __tsan_mutex_pre_unlock(mu, 0);
  if (annotate) __tsan_mutex_post_unlock(mu, 0);
  if (annotate) __tsan_mutex_pre_lock(mu, 0);
  const bool result = real(this, mu, timeout);
  if (annotate) __tsan_mutex_post_lock(mu, 0, 0);
  return result;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  SHIM_REAL(
      bool (*)(CondVar*, Mutex*, absl::Time),
      "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  if (annotate) __tsan_mutex_pre_unlock(mu, 0);
  if (annotate) __tsan_mutex_post_unlock(mu, 0);
  if (annotate) __tsan_mutex_pre_lock(mu, 0);
  const bool result = real(this, mu, deadline);
  if (annotate) __tsan_mutex_post_lock(mu, 0, 0);
  return result;
}

ABSL_NAMESPACE_END
}  // namespace absl
