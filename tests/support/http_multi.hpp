#pragma once
// Many HTTP calls in flight at once on one thread (libcurl multi), for crash tests that need
// hundreds of requests outstanding when the server is killed. Each call's reply lands in its slot;
// a call that was never answered keeps status 0 and carries curl's error.

#include "support/http_client.hpp"

#include <atomic>
#include <vector>

namespace wopbridge::testing {

// Runs every call with at most `max_parallel` transfers open; returns when all have finished
// (answered, failed or timed out). `answered` counts replies with a status as they arrive, so
// another thread can pick a point to act on.
std::vector<http_reply> perform_all(const std::vector<http_call>& calls, int max_parallel,
                                    std::atomic<int>* answered = nullptr);

} // namespace wopbridge::testing
