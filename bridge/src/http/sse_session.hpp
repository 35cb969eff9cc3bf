#pragma once
// One open Server-Sent Events response: a run's event log (run_handlers.cpp) or the tenant's
// change hints (change_stream.cpp). Both share the keep-alive and the ending (http_api::end_sse).
#include "http/api.hpp"

#include <cstdint>
#include <memory>
#include <mutex>

namespace wopbridge::http {

struct http_api::sse_session {
    enum class follows { run_events, changes };
    follows kind = follows::run_events;
    std::shared_ptr<context> ctx;
    std::shared_ptr<response_stream> stream;
    std::mutex mu;
    bool ended = false;
    bool reading = false; // run events: a pump is running or queued
    std::int64_t last_sequence = -1;
    std::uint64_t watch = 0;     // the bridge's watch token while armed
    std::uint64_t flush = 0;     // changes: the coalescing timer while a frame is due
    std::uint64_t keepalive = 0;
    std::uint64_t waiter = 0;
};

} // namespace wopbridge::http
