// GET /v1/runs/{runId}, /events/poll (long poll) and /events (Server-Sent Events).
// Waiting never holds a thread: bridge::watch_run plus a scheduler timer, whichever fires first.

#include "contract/wire.hpp"
#include "http/api.hpp"
#include "http/api_helpers.hpp"
#include "http/sse_session.hpp"

#include <boost/json/array.hpp>

#include <fstream>
#include <sstream>

namespace wopbridge::http {

namespace json = boost::json;

struct http_api::poll_wait {
    std::shared_ptr<context> ctx;
    std::int64_t after = -1;
    std::mutex mu;
    bool done = false;
    std::uint64_t watch = 0;
    std::uint64_t timer = 0;
    std::uint64_t waiter = 0;
};

namespace {

http_response poll_body(const poll_result& r) {
    json::array events;
    for (const auto& e : r.events) {
        events.push_back(wire::run_event(e));
    }
    return http_response::json(200, json::serialize(json::object{{"events", std::move(events)},
                                                                 {"isComplete", r.is_complete}}));
}

std::string sse_frame(const run_event& e) {
    std::string out = "id: " + std::to_string(e.sequence) + "\nevent: " + e.type + "\ndata: ";
    out += json::serialize(wire::run_event(e));
    out += "\n\n";
    return out;
}

} // namespace

void http_api::get_run(context& ctx) {
    auto r = bridge_.get_run(ctx.who.tenant, ctx.param("runId"));
    if (!r) {
        detail::reply_error(ctx, r.error());
        return;
    }
    detail::reply_json(ctx, 200, wire::run_snapshot(*r));
}

// A local workflow command's stdout and stderr, as captured (bounded by the run starter); empty for
// a run that ran no command. Tenant-scoped like the run itself.
void http_api::get_run_output(context& ctx) {
    auto r = bridge_.get_run(ctx.who.tenant, ctx.param("runId"));
    if (!r) {
        detail::reply_error(ctx, r.error());
        return;
    }
    http_response res;
    res.status = 200;
    res.set_header("content-type", "text/plain; charset=utf-8");
    res.set_header("cache-control", "no-store");
    if (!opts_.run_output_dir.empty()) {
        std::ifstream in(opts_.run_output_dir + "/" + r->id + ".log", std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        res.body = text.str();
    }
    ctx.sink->send(std::move(res));
}

// ---- long poll ----------------------------------------------------------------------------------

void http_api::poll_events(std::shared_ptr<context> ctx) {
    std::int64_t after = -1;
    if (auto last = ctx->req.query_param("lastSequence")) {
        long long n = 0;
        if (!detail::parse_int(*last, n, true) || n < -1) {
            ctx->sink->send(
                validation_error("lastSequence", "lastSequence must be an integer >= -1"));
            return;
        }
        after = n;
    }
    int timeout_s = opts_.poll_default_timeout_s;
    if (auto t = ctx->req.query_param("timeout")) {
        long long n = 0;
        if (!detail::parse_int(*t, n) || n < 1 || n > 60) {
            ctx->sink->send(validation_error("timeout", "timeout must be an integer within 1..60"));
            return;
        }
        timeout_s = static_cast<int>(n);
    }
    const auto& run_id = ctx->param("runId");
    auto r = bridge_.read_events(ctx->who.tenant, run_id, after, opts_.read_batch);
    if (!r) {
        detail::reply_error(*ctx, r.error());
        return;
    }
    if (!r->events.empty() || r->is_complete || shutting_down_) {
        ctx->sink->send(poll_body(*r));
        return;
    }
    // Nothing yet (a run reserved by an accepted delivery lands here too): wait.
    auto w = std::make_shared<poll_wait>();
    w->ctx = ctx;
    w->after = after;
    std::weak_ptr<poll_wait> weak = w;
    auto waiter = add_waiter([this, weak] {
        if (auto w = weak.lock()) {
            finish_poll(w, poll_body(poll_result{}));
        }
    });
    auto timer = tasks_.after(std::chrono::seconds(timeout_s),
                              [this, w] { finish_poll(w, poll_body(poll_result{})); });
    bool finished_early = false;
    {
        std::lock_guard lock(w->mu);
        w->waiter = waiter;
        w->timer = timer;
        finished_early = w->done;
    }
    if (finished_early) {
        // finish_poll ran before the tokens were known: release what it could not.
        tasks_.cancel(timer);
        remove_waiter(waiter);
        return;
    }
    arm_poll_watch(w);
}

// A run's watchers wake on any of its events, including a late notification of one this poll
// already has (the attempt listener reports after the commit): nothing new means wait on.
void http_api::arm_poll_watch(const std::shared_ptr<poll_wait>& w) {
    auto watch = bridge_.watch_run(w->ctx->param("runId"), w->after, [this, w] {
        // Any thread, must not block: read on a worker.
        tasks_.post([this, w] {
            {
                std::lock_guard lock(w->mu);
                if (w->done) {
                    return;
                }
            }
            auto r = bridge_.read_events(w->ctx->who.tenant, w->ctx->param("runId"), w->after,
                                         opts_.read_batch);
            if (r && r->events.empty() && !r->is_complete && !shutting_down_) {
                arm_poll_watch(w);
                return;
            }
            finish_poll(w, r ? poll_body(*r) : error_response(r.error()));
        });
    });
    bool finished_early = false;
    {
        std::lock_guard lock(w->mu);
        w->watch = watch;
        finished_early = w->done;
    }
    if (finished_early) {
        bridge_.cancel_watch(watch);
    }
}

void http_api::finish_poll(const std::shared_ptr<poll_wait>& w, http_response res) {
    std::uint64_t watch = 0;
    std::uint64_t timer = 0;
    std::uint64_t waiter = 0;
    {
        std::lock_guard lock(w->mu);
        if (w->done) {
            return;
        }
        w->done = true;
        watch = w->watch;
        timer = w->timer;
        waiter = w->waiter;
    }
    if (timer) {
        tasks_.cancel(timer);
    }
    if (watch) {
        bridge_.cancel_watch(watch);
    }
    if (waiter) {
        remove_waiter(waiter);
    }
    w->ctx->sink->send(std::move(res));
}

// ---- Server-Sent Events -------------------------------------------------------------------------

void http_api::stream_events(std::shared_ptr<context> ctx) {
    std::int64_t after = -1;
    auto resume = ctx->req.header("last-event-id");
    std::optional<std::string> from_query;
    if (!resume) {
        from_query = ctx->req.query_param("lastSequence");
    }
    if (resume || from_query) {
        std::string_view text = resume ? *resume : std::string_view(*from_query);
        long long n = 0;
        if (!detail::parse_int(text, n, true) || n < -1) {
            ctx->sink->send(validation_error(resume ? "Last-Event-ID" : "lastSequence",
                                             "must be an event sequence number"));
            return;
        }
        after = n;
    }
    if (auto mode = ctx->req.query_param("streamMode"); mode && *mode != "updates") {
        json::object details{{"supported", json::array{"updates"}}};
        ctx->sink->send(error_response(400, "unsupported_stream_mode",
                                       "only streamMode=updates is served", std::move(details)));
        return;
    }
    // 404 (unknown or foreign run) before the stream opens.
    auto first = bridge_.read_events(ctx->who.tenant, ctx->param("runId"), after, opts_.read_batch);
    if (!first) {
        detail::reply_error(*ctx, first.error());
        return;
    }
    http_response head;
    head.status = 200;
    head.set_header("content-type", "text/event-stream");
    head.set_header("cache-control", "no-cache");
    head.set_header("x-accel-buffering", "no");
    auto s = std::make_shared<sse_session>();
    s->ctx = ctx;
    s->last_sequence = after;
    s->stream = ctx->sink->open_stream(std::move(head));
    s->reading = true;
    std::weak_ptr<sse_session> weak = s;
    auto waiter = add_waiter([this, weak] {
        if (auto s = weak.lock()) {
            end_sse(s, true);
        }
    });
    {
        std::lock_guard lock(s->mu);
        s->waiter = waiter;
    }
    s->stream->on_abort([this, weak] {
        if (auto s = weak.lock()) {
            end_sse(s, false);
        }
    });
    // Write what exists, then watch for more.
    bool terminal = false;
    {
        std::lock_guard lock(s->mu);
        if (s->ended) {
            return;
        }
        for (const auto& e : first->events) {
            s->stream->write(sse_frame(e));
            s->last_sequence = e.sequence;
            terminal = terminal || wire::is_terminal_run_event(e.type);
        }
    }
    if (terminal || (first->is_complete && first->events.size() < std::size_t(opts_.read_batch))) {
        end_sse(s, true);
        return;
    }
    arm_keepalive(s);
    pump_sse(s);
}

void http_api::pump_sse(const std::shared_ptr<sse_session>& s) {
    std::int64_t after = 0;
    {
        std::lock_guard lock(s->mu);
        if (s->ended) {
            return;
        }
        after = s->last_sequence;
    }
    auto token = bridge_.watch_run(s->ctx->param("runId"), after, [this, s] {
        tasks_.post([this, s] {
            std::int64_t from = 0;
            {
                std::lock_guard lock(s->mu);
                if (s->ended) {
                    return;
                }
                from = s->last_sequence;
            }
            auto r = bridge_.read_events(s->ctx->who.tenant, s->ctx->param("runId"), from,
                                         opts_.read_batch);
            if (!r) {
                end_sse(s, true);
                return;
            }
            bool terminal = false;
            {
                std::lock_guard lock(s->mu);
                if (s->ended) {
                    return;
                }
                for (const auto& e : r->events) {
                    if (e.sequence <= s->last_sequence) {
                        continue;
                    }
                    s->stream->write(sse_frame(e));
                    s->last_sequence = e.sequence;
                    terminal = terminal || wire::is_terminal_run_event(e.type);
                }
                s->watch = 0;
            }
            if (terminal || (r->is_complete && r->events.size() < std::size_t(opts_.read_batch))) {
                end_sse(s, true);
                return;
            }
            pump_sse(s);
        });
    });
    if (!s->keep(&sse_session::watch, token)) {
        bridge_.cancel_watch(token);
    }
}

void http_api::arm_keepalive(const std::shared_ptr<sse_session>& s) {
    std::weak_ptr<sse_session> weak = s;
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
        arm_keepalive(s);
    });
    if (!s->keep(&sse_session::keepalive, token)) {
        tasks_.cancel(token);
    }
}

void http_api::end_sse(const std::shared_ptr<sse_session>& s, bool close_stream) {
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
    if (watch && s->kind == sse_session::follows::changes) {
        bridge_.cancel_changes_watch(watch);
    } else if (watch) {
        bridge_.cancel_watch(watch);
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
