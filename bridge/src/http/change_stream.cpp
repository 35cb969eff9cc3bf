// GET /v1/ops/changes: Server-Sent Events telling a live view (the dashboard) that the caller's
// tenant changed on this node, so it re-reads instead of polling. Content-free frames:
//
//     event: change
//     data: {}
//
// Changes are coalesced to at most one frame per `change_interval`: when the feed fires, a timer
// waits out the interval, re-arms the feed, then writes the frame. A change in between is covered
// by that frame (the client reads after it); one after the re-arm fires the feed again.

#include "http/api.hpp"
#include "http/api_helpers.hpp"

#include <mutex>

namespace wopbridge::http {

struct http_api::change_session {
    std::shared_ptr<context> ctx;
    std::shared_ptr<response_stream> stream;
    std::mutex mu;
    bool ended = false;
    std::uint64_t watch = 0;     // the feed's token while armed
    std::uint64_t flush = 0;     // the coalescing timer while a frame is due
    std::uint64_t keepalive = 0;
    std::uint64_t waiter = 0;
};

void http_api::stream_changes(std::shared_ptr<context> ctx) {
    http_response head;
    head.status = 200;
    head.set_header("content-type", "text/event-stream");
    head.set_header("cache-control", "no-cache");
    head.set_header("x-accel-buffering", "no");
    auto s = std::make_shared<change_session>();
    s->ctx = ctx;
    s->stream = ctx->sink->open_stream(std::move(head));
    std::weak_ptr<change_session> weak = s;
    auto waiter = add_waiter([this, weak] {
        if (auto s = weak.lock()) {
            end_changes(s, true);
        }
    });
    {
        std::lock_guard lock(s->mu);
        s->waiter = waiter;
        // The client reconnects after 2 s if the stream drops; `ready` tells it to read once now.
        s->stream->write("retry: 2000\nevent: ready\ndata: {}\n\n");
    }
    s->stream->on_abort([this, weak] {
        if (auto s = weak.lock()) {
            end_changes(s, false);
        }
    });
    arm_changes(s);
    arm_changes_keepalive(s);
}

void http_api::arm_changes(const std::shared_ptr<change_session>& s) {
    // The armed feed (then the due timer) owns the session; end_changes cancels both.
    auto token = bridge_.watch_changes(s->ctx->who.tenant, [this, s] {
        // On the writing thread: only schedule.
        auto timer = tasks_.after(opts_.change_interval, [this, s] {
            {
                std::lock_guard lock(s->mu);
                if (s->ended) {
                    return;
                }
                s->flush = 0;
                s->watch = 0;
            }
            arm_changes(s);
            std::lock_guard lock(s->mu);
            if (!s->ended) {
                s->stream->write("event: change\ndata: {}\n\n");
            }
        });
        bool ended = false;
        {
            std::lock_guard lock(s->mu);
            ended = s->ended;
            if (!ended) {
                s->flush = timer;
            }
        }
        if (ended) {
            tasks_.cancel(timer);
        }
    });
    bool ended = false;
    {
        std::lock_guard lock(s->mu);
        ended = s->ended;
        if (!ended) {
            s->watch = token;
        }
    }
    if (ended) {
        bridge_.cancel_changes_watch(token);
    }
}

void http_api::arm_changes_keepalive(const std::shared_ptr<change_session>& s) {
    std::weak_ptr<change_session> weak = s;
    auto token = tasks_.after(opts_.sse_keepalive, [this, weak] {
        auto s = weak.lock();
        if (!s) {
            return;
        }
        {
            std::lock_guard lock(s->mu);
            if (s->ended) {
                return;
            }
            s->stream->write(": keep-alive\n\n");
        }
        arm_changes_keepalive(s);
    });
    bool ended = false;
    {
        std::lock_guard lock(s->mu);
        ended = s->ended;
        if (!ended) {
            s->keepalive = token;
        }
    }
    if (ended) {
        tasks_.cancel(token);
    }
}

void http_api::end_changes(const std::shared_ptr<change_session>& s, bool close_stream) {
    std::uint64_t watch = 0;
    std::uint64_t flush = 0;
    std::uint64_t keepalive = 0;
    std::uint64_t waiter = 0;
    {
        std::lock_guard lock(s->mu);
        if (s->ended) {
            return;
        }
        s->ended = true;
        watch = s->watch;
        flush = s->flush;
        keepalive = s->keepalive;
        waiter = s->waiter;
    }
    if (watch) {
        bridge_.cancel_changes_watch(watch);
    }
    for (auto t : {flush, keepalive}) {
        if (t) {
            tasks_.cancel(t);
        }
    }
    if (waiter) {
        remove_waiter(waiter);
    }
    if (close_stream) {
        s->stream->close();
    }
}

} // namespace wopbridge::http
