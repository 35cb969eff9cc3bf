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
    std::uint64_t watch = 0; // the bridge's watch token while armed
    std::uint64_t flush = 0; // changes: the coalescing timer while a frame is due
    std::uint64_t keepalive = 0;
    std::uint64_t waiter = 0;

    // Keeps a just-armed watch or timer in `slot` while the stream is open; false when it ended
    // meanwhile (end_sse already ran and cancelled what it saw), so the caller cancels `token`.
    bool keep(std::uint64_t sse_session::*slot, std::uint64_t token) {
        std::lock_guard lock(mu);
        if (ended) {
            return false;
        }
        this->*slot = token;
        return true;
    }
};

} // namespace wopbridge::http
