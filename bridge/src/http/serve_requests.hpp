// The keep-alive request loop of one connection (framing, limits, in-flight slots, timeouts),
// handing each request to the handler and writing its reply or stream. A template over the stream
// type, included only by serve_requests_plain.cpp and serve_requests_tls.cpp: each instantiates it
// for one stream, so the two heaviest instantiations in the program compile in parallel.
#pragma once

#include "http/chunked_check.hpp"
#include "http/error_mapping.hpp"
#include "http/request_framing.hpp"
#include "http/server_impl.hpp"

namespace wopbridge::http {

namespace server_detail {

inline bhttp::response<bhttp::string_body> to_beast(const http_response& r, bool keep_alive) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(r.status), 11};
    res.set(bhttp::field::server, "wopbridge");
    // No response of ours is meant to be sniffed into another type (a JSON error echoing a
    // field name read as HTML, say).
    res.set("X-Content-Type-Options", "nosniff");
    for (const auto& [k, v] : r.headers) {
        res.set(k, v);
    }
    res.body() = r.body;
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

// Built outside coroutine bodies: GCC 12 miscompiles string literals inside co_await expressions.
inline http_response overloaded(int retry_after_s) {
    return error_response(503, "service_unavailable", "the server is at capacity; retry later",
                          std::nullopt, std::max(1, retry_after_s));
}

inline http_response bad_framing() {
    return error_response(400, "bad_request",
                          "ambiguous request framing: only one Content-Length, or "
                          "Transfer-Encoding: chunked alone, is accepted");
}

inline http_response bad_chunked_body() {
    return error_response(400, "bad_request",
                          "malformed chunked body: chunk sizes are 1 to 16 hex digits, every line "
                          "ends in CRLF, and a trailer carries no framing field");
}

// A parse error in the body, as opposed to the peer leaving (end_of_stream, partial_message) or
// an I/O error or timeout, where there is no one to answer.
inline bool is_malformed_body(const boost::system::error_code& ec) {
    return ec.category() == bhttp::make_error_code(bhttp::error::bad_chunk).category() &&
           ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message &&
           ec != bhttp::error::need_more && ec != bhttp::error::need_buffer;
}

inline http_response too_large(std::size_t limit) {
    return error_response(413, "payload_too_large", "the request body exceeds the limit",
                          boost::json::object{{"maxBodyBytes", limit}});
}

} // namespace server_detail

template <class Stream>
net::awaitable<bool> server::impl::write_response(Stream& stream, const http_response& r,
                                                  bool keep_alive) {
    auto res = server_detail::to_beast(r, keep_alive);
    beast::get_lowest_layer(stream).expires_after(opts.write_timeout);
    auto [ec, n] = co_await bhttp::async_write(stream, res, server_detail::use_tuple);
    co_return !ec;
}

template <class Stream>
net::awaitable<void>
server::impl::serve_requests(Stream& stream, beast::flat_buffer& buffer,
                             const std::shared_ptr<server_detail::connection_state>& conn,
                             std::string remote, bool& lingering_close) {
    using namespace server_detail;
    auto& lowest = beast::get_lowest_layer(stream);
    for (;;) {
        if (stopping) {
            co_return;
        }
        conn->idle = true;
        if (buffer.size() == 0) {
            lowest.expires_after(opts.idle_timeout);
            auto [ec, n] = co_await stream.async_read_some(buffer.prepare(8192), use_tuple);
            if (ec) {
                co_return;
            }
            buffer.commit(n);
        }
        conn->idle = false;

        bhttp::request_parser<bhttp::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(opts.max_header_bytes));
        // Beast's default body limit (1 MiB) would refuse a larger Content-Length inside the header
        // read, before the route's own limit is known; the route's limit is applied below instead.
        parser.body_limit(boost::none);
        lowest.expires_after(opts.header_timeout);
        {
            auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, use_tuple);
            if (ec == bhttp::error::header_limit) {
                auto res = error_response(431, "header_too_large", "request header too large");
                co_await write_response(stream, res, false);
                lingering_close = true;
                co_return;
            }
            if (ec) {
                if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
                    auto res = error_response(400, "bad_request", "malformed HTTP request");
                    co_await write_response(stream, res, false);
                    lingering_close = true;
                }
                co_return;
            }
        }
        const auto& hdr = parser.get();
        std::vector<header_view> fields;
        for (const auto& f : hdr) {
            fields.emplace_back(std::string_view(f.name_string().data(), f.name_string().size()),
                                std::string_view(f.value().data(), f.value().size()));
        }
        auto framing = framing_of(fields);
        if (!framing) {
            // The body's end is unknown, so is the next request's start: answer and close.
            auto res = bad_framing();
            co_await write_response(stream, res, false);
            lingering_close = true;
            co_return;
        }
        std::string method(hdr.method_string());
        std::string target(hdr.target());
        std::string path = target.substr(0, target.find('?'));
        const std::size_t limit = handler->body_limit(method, path);
        if (framing->kind == body_framing::content_length && framing->content_length > limit) {
            auto res = too_large(limit);
            co_await write_response(stream, res, false);
            lingering_close = true;
            co_return;
        }
        const int slots =
            std::max(1, opts.max_in_flight_requests) +
            (handler->is_control_route(method, path) ? std::max(0, opts.reserved_in_flight_requests)
                                                     : 0);
        if (in_flight.fetch_add(1) >= slots) {
            in_flight.fetch_sub(1);
            auto res = overloaded(opts.overload_retry_after_s);
            co_await write_response(stream, res, false);
            lingering_close = true;
            co_return;
        }
        in_flight_slot slot(&in_flight);
        parser.body_limit(limit);
        if (bhttp::token_list{hdr[bhttp::field::expect]}.exists("100-continue")) {
            bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, 11};
            lowest.expires_after(opts.write_timeout);
            auto [ec, n] = co_await bhttp::async_write(stream, cont, use_tuple);
            if (ec) {
                co_return;
            }
        }
        {
            // The deadline moves with what arrived: a trickle that holds a slot is cut off once
            // past the grace period it falls below the minimum rate, long before body_timeout.
            const auto body_start = std::chrono::steady_clock::now();
            const auto hard_deadline = body_start + opts.body_timeout;
            std::uint64_t received = 0;
            boost::system::error_code ec;
            // The bytes are read here and handed to the parser (what bhttp::async_read_some does)
            // so the strict chunked check sees each one first; `checked` counts the buffered bytes
            // it has already read.
            chunked_check strict;
            std::size_t checked = 0;
            while (!parser.is_done()) {
                if (framing->kind == body_framing::chunked) {
                    std::string_view buffered(static_cast<const char*>(buffer.data().data()),
                                              buffer.size());
                    if (strict.feed(buffered.substr(checked)) ==
                        chunked_check::verdict::malformed) {
                        ec = bhttp::error::bad_chunk;
                        break;
                    }
                    checked = buffered.size();
                }
                if (buffer.size() > 0) {
                    boost::system::error_code put_ec;
                    const auto used = parser.put(buffer.data(), put_ec);
                    buffer.consume(used);
                    checked -= std::min(checked, used);
                    if (!put_ec) {
                        continue;
                    }
                    if (put_ec != bhttp::error::need_more) {
                        ec = put_ec;
                        break;
                    }
                }
                auto deadline = hard_deadline;
                if (opts.min_body_bytes_per_second > 0) {
                    deadline = std::min(deadline,
                                        body_start + opts.body_grace +
                                            std::chrono::milliseconds(
                                                received * 1000 / opts.min_body_bytes_per_second));
                }
                lowest.expires_at(deadline);
                auto [e, n] = co_await stream.async_read_some(buffer.prepare(65536), use_tuple);
                if (e) {
                    ec = e == net::error::eof ? bhttp::error::partial_message : e;
                    break;
                }
                buffer.commit(n);
                received += n;
            }
            if (ec == bhttp::error::body_limit) {
                auto res = too_large(limit);
                co_await write_response(stream, res, false);
                lingering_close = true;
                co_return;
            }
            if (ec && is_malformed_body(ec)) {
                // The client is still there and its framing is broken: say so, then close (where
                // the next request would start is unknown).
                auto res = bad_chunked_body();
                co_await write_response(stream, res, false);
                lingering_close = true;
                co_return;
            }
            if (ec) { // also a trickle past its deadline: tcp_stream has closed the socket
                co_return;
            }
        }
        lowest.expires_never();

        auto msg = parser.release();
        const bool client_keep_alive = msg.keep_alive();
        header_list headers;
        for (const auto& f : msg) {
            headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
        }
        auto req = http_request::make(std::move(method), std::move(target), std::move(headers),
                                      std::move(msg.body()), remote);

        auto ex = std::make_shared<exchange>(conn->strand);
        conn->current = ex;
        // A stream and its exchange point at each other (the stream posts into the exchange);
        // the request's end, however it ends (also a coroutine destroyed at shutdown), breaks
        // the cycle, or every streamed response would leak both.
        struct stream_release {
            exchange& ex;
            ~stream_release() { ex.stream.reset(); }
        } release_stream{*ex};
        {
            auto sink = std::make_shared<sink_impl>(ex, gate, scheduler);
            handler->handle(std::move(req), std::move(sink));
        }
        while (!ex->response && !ex->stream_head && !ex->force_closed) {
            ex->signal.expires_at(net::steady_timer::time_point::max());
            co_await ex->signal.async_wait(use_tuple);
        }
        slot.release(); // answered (or streaming): its request body is no longer held
        if (ex->force_closed) {
            co_return;
        }
        if (ex->response) {
            const bool keep = client_keep_alive && !stopping;
            bool ok = co_await write_response(stream, *ex->response, keep);
            conn->current.reset();
            if (!ok || !keep) {
                co_return;
            }
            continue;
        }

        // Streamed response (SSE): chunked, written as the handler produces it.
        const bool keep = client_keep_alive && !stopping;
        bhttp::response<bhttp::empty_body> head{static_cast<bhttp::status>(ex->stream_head->status),
                                                11};
        head.set(bhttp::field::server, "wopbridge");
        head.set("X-Content-Type-Options", "nosniff");
        for (const auto& [k, v] : ex->stream_head->headers) {
            head.set(k, v);
        }
        head.keep_alive(keep);
        head.chunked(true);
        bhttp::response_serializer<bhttp::empty_body> sr{head};
        lowest.expires_after(opts.write_timeout);
        bool ok = !std::get<0>(co_await bhttp::async_write_header(stream, sr, use_tuple));
        while (ok) {
            while (ok && !ex->chunks.empty()) {
                std::string chunk = std::move(ex->chunks.front());
                ex->chunks.pop_front();
                lowest.expires_after(opts.write_timeout);
                auto [ec, n] = co_await net::async_write(
                    stream, bhttp::make_chunk(net::buffer(chunk)), use_tuple);
                ok = !ec;
            }
            if (!ok || ex->force_closed) {
                ok = false;
                break;
            }
            if (ex->stream_closed) {
                lowest.expires_after(opts.write_timeout);
                auto [ec, n] =
                    co_await net::async_write(stream, bhttp::make_chunk_last(), use_tuple);
                ok = !ec;
                break;
            }
            ex->signal.expires_at(net::steady_timer::time_point::max());
            co_await ex->signal.async_wait(use_tuple);
        }
        lowest.expires_never();
        if (!ok || !ex->stream_closed) {
            ex->stream->fire_abort();
        }
        conn->current.reset();
        if (!ok || !keep) {
            co_return;
        }
    }
}

} // namespace wopbridge::http
