#pragma once
// Names the calling thread (at most 15 characters on Linux), so `top -H`, `perf` and the
// benchmark's per-thread CPU figures (bench/run: /proc/PID/task/TID/comm) tell the bridge's
// threads apart by role: the per-event cost table is read by these names.

#include <pthread.h>

namespace wopbridge {

inline void name_this_thread(const char* name) noexcept {
    ::pthread_setname_np(::pthread_self(), name);
}

} // namespace wopbridge
