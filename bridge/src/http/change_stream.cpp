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
#include "http/sse_session.hpp"

namespace wopbridge::http {

void http_api::stream_changes(std::shared_ptr<context> ctx) {
    http_response head;
    head.status = 200;
    head.set_header("content-type", "text/event-stream");
    head.set_header("cache-control", "no-cache");
    head.set_header("x-accel-buffering", "no");
    auto s = std::make_shared<sse_session>();
    s->kind = sse_session::follows::changes;
    s->ctx = ctx;
    s->stream = ctx->sink->open_stream(std::move(head));
    std::weak_ptr<sse_session> weak = s;
    auto waiter = add_waiter([this, weak] {
        if (auto s = weak.lock()) {
            end_sse(s, true);
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
            end_sse(s, false);
        }
    });
    arm_changes(s);
    arm_keepalive(s);
}

void http_api::arm_changes(const std::shared_ptr<sse_session>& s) {
    // The armed feed (then the due timer) owns the session; end_sse cancels both.
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
        if (!s->keep(&sse_session::flush, timer)) {
            tasks_.cancel(timer);
        }
    });
    if (!s->keep(&sse_session::watch, token)) {
        bridge_.cancel_changes_watch(token);
    }
}

} // namespace wopbridge::http
