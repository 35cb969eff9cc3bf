#pragma once
// Clang's thread-safety analysis (-Wthread-safety; scripts/thread-safety.sh,
// docs/guarantees/thread-safety.md): the attribute macros, which expand to nothing on other
// compilers, and the annotated mutex and lock types the analysis needs, because libstdc++'s
// std::mutex and std::lock_guard carry no annotations. The shapes follow the mutex.h example of
// Clang's documentation.
//
//   wopbridge::mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   void bump() EXCLUDES(mu_) { wopbridge::lock_guard lock(mu_); ++count_; }
//   void bump_locked() REQUIRES(mu_);
//
// A condition variable is waited on through the unique_lock (lock.wait(cv, pred)): the wait
// releases and takes the mutex again inside, so to the analysis the mutex stays held, which is
// what the caller sees on return. The predicate runs with the mutex held; annotate it
// `[&]() REQUIRES(mu_) { ... }` when it reads guarded members.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define WOPBRIDGE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WOPBRIDGE_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) WOPBRIDGE_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY WOPBRIDGE_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) WOPBRIDGE_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) WOPBRIDGE_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) WOPBRIDGE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) WOPBRIDGE_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) WOPBRIDGE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) WOPBRIDGE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) WOPBRIDGE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) WOPBRIDGE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) WOPBRIDGE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) WOPBRIDGE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) WOPBRIDGE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...)                                                                    \
    WOPBRIDGE_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) WOPBRIDGE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) WOPBRIDGE_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) WOPBRIDGE_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS WOPBRIDGE_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace wopbridge {

// std::mutex, as a capability.
class CAPABILITY("mutex") mutex {
  public:
    using native_type = std::mutex;

    mutex() = default;
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    void lock() ACQUIRE() { m_.lock(); }
    void unlock() RELEASE() { m_.unlock(); }
    bool try_lock() TRY_ACQUIRE(true) { return m_.try_lock(); }

    // The std::mutex itself, for what must hold one (std::unique_lock for a condition variable):
    // the analysis does not see what is done through it.
    std::mutex& native() noexcept { return m_; }

  private:
    std::mutex m_;
};

// std::shared_mutex, as a capability held exclusively (lock) or shared (lock_shared).
class CAPABILITY("shared_mutex") shared_mutex {
  public:
    using native_type = std::shared_mutex;

    shared_mutex() = default;
    shared_mutex(const shared_mutex&) = delete;
    shared_mutex& operator=(const shared_mutex&) = delete;

    void lock() ACQUIRE() { m_.lock(); }
    void unlock() RELEASE() { m_.unlock(); }
    bool try_lock() TRY_ACQUIRE(true) { return m_.try_lock(); }
    void lock_shared() ACQUIRE_SHARED() { m_.lock_shared(); }
    void unlock_shared() RELEASE_SHARED() { m_.unlock_shared(); }
    bool try_lock_shared() TRY_ACQUIRE_SHARED(true) { return m_.try_lock_shared(); }

    std::shared_mutex& native() noexcept { return m_; }

  private:
    std::shared_mutex m_;
};

// std::lock_guard: holds the mutex exclusively for its scope.
template <class Mutex> class SCOPED_CAPABILITY lock_guard {
  public:
    explicit lock_guard(Mutex& m) ACQUIRE(m) : m_(m) { m_.lock(); }
    ~lock_guard() RELEASE() { m_.unlock(); }
    lock_guard(const lock_guard&) = delete;
    lock_guard& operator=(const lock_guard&) = delete;

  private:
    Mutex& m_;
};

// std::shared_lock: holds a shared_mutex shared for its scope.
class SCOPED_CAPABILITY shared_lock {
  public:
    explicit shared_lock(shared_mutex& m) ACQUIRE_SHARED(m) : m_(m) { m_.lock_shared(); }
    ~shared_lock() RELEASE() { m_.unlock_shared(); }
    shared_lock(const shared_lock&) = delete;
    shared_lock& operator=(const shared_lock&) = delete;

  private:
    shared_mutex& m_;
};

// std::unique_lock: held exclusively from construction; unlock() and lock() may let it go and
// take it again within the scope, and the waits take a std::condition_variable (wopbridge::mutex;
// for a shared_mutex, std::condition_variable_any).
template <class Mutex> class SCOPED_CAPABILITY unique_lock {
  public:
    explicit unique_lock(Mutex& m) ACQUIRE(m) : lk_(m.native()) {}
    // The analysis follows the capability through these annotations, not through lk_.
    ~unique_lock() RELEASE() NO_THREAD_SAFETY_ANALYSIS = default;
    unique_lock(const unique_lock&) = delete;
    unique_lock& operator=(const unique_lock&) = delete;

    void lock() ACQUIRE() { lk_.lock(); }
    void unlock() RELEASE() { lk_.unlock(); }

    // Each wait returns with the mutex held again, as it was held on entry.
    template <class Condition> void wait(Condition& cv) { cv.wait(lk_); }
    template <class Condition, class Predicate> void wait(Condition& cv, Predicate pred) {
        cv.wait(lk_, std::move(pred));
    }
    template <class Condition, class Rep, class Period>
    std::cv_status wait_for(Condition& cv, const std::chrono::duration<Rep, Period>& d) {
        return cv.wait_for(lk_, d);
    }
    template <class Condition, class Rep, class Period, class Predicate>
    bool wait_for(Condition& cv, const std::chrono::duration<Rep, Period>& d, Predicate pred) {
        return cv.wait_for(lk_, d, std::move(pred));
    }
    template <class Condition, class Clock, class Duration>
    std::cv_status wait_until(Condition& cv, const std::chrono::time_point<Clock, Duration>& t) {
        return cv.wait_until(lk_, t);
    }
    template <class Condition, class Clock, class Duration, class Predicate>
    bool wait_until(Condition& cv, const std::chrono::time_point<Clock, Duration>& t,
                    Predicate pred) {
        return cv.wait_until(lk_, t, std::move(pred));
    }

  private:
    std::unique_lock<typename Mutex::native_type> lk_;
};

} // namespace wopbridge
