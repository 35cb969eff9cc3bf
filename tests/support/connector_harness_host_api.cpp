// The wb_host_api a module under test calls: each function checks what the real host checks
// (recording a violation where a module breaks the contract), then acts on the fake host.
#include "support/connector_harness_impl.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <cstdio>
#include <random>

namespace wopbridge::testing::harness_detail {

void host_log(wb_host* h, wb_log_level level, wb_str message) {
    auto& s = connector_harness::impl::self(h);
    std::lock_guard lock(s.mu);
    s.logs.push_back(std::string(level_name(level)) + " " + to_string(message));
}

std::int64_t host_now_ms(wb_host* h) {
    return connector_harness::impl::self(h).now.load();
}

wb_status host_random_bytes(wb_host*, std::uint8_t* out, std::size_t n) {
    if (out == nullptr && n > 0) {
        return WB_ERR_INVALID;
    }
    std::random_device rd;
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = static_cast<std::uint8_t>(rd());
    }
    return WB_OK;
}

wb_status host_submit(wb_host* h, const wb_inbound_event* event, wb_submit_done_fn done,
                      void* user) {
    auto& s = connector_harness::impl::self(h);
    if (event == nullptr || done == nullptr || event->struct_size < sizeof(wb_inbound_event)) {
        s.violation("submit: null event/callback or short struct_size");
        return WB_ERR_INVALID;
    }
    recorded_submit rec;
    rec.subscription_id = to_string(event->subscription_id);
    rec.provider_event_id = to_string(event->provider_event_id);
    rec.received_at_ms = event->received_at_ms;
    rec.verified = event->verified != 0;
    rec.content_json = to_string(event->content_json);

    // The content must be a JSON object with exactly one per-source key.
    boost::system::error_code ec;
    auto parsed = boost::json::parse(rec.content_json, ec);
    if (ec || !parsed.is_object() || parsed.as_object().size() != 1) {
        s.violation("submit: content_json is not an object with exactly one per-source key");
    }
    if (rec.provider_event_id.empty()) {
        s.violation("submit: empty provider_event_id");
    }

    std::string run_id;
    std::string delivery_id;
    {
        std::lock_guard lock(s.mu);
        const std::string key = rec.subscription_id + '\0' + rec.provider_event_id;
        if (s.subscribed.count(rec.subscription_id) == 0) {
            // As the real host: a connector only submits for subscriptions it was handed.
            return WB_ERR_INVALID;
        }
        if (auto it = s.dedup.find(key); it != s.dedup.end()) {
            rec.outcome = WB_SUBMIT_DUPLICATE;
            rec.run_id = it->second;
        } else if (s.mode == submit_mode::refuse) {
            rec.outcome = WB_SUBMIT_REFUSED;
            rec.reason = s.refuse_reason.empty() ? "subscription_not_active" : s.refuse_reason;
        } else {
            ++s.run_counter;
            std::string id = "run_" + std::to_string(s.run_counter);
            s.dedup.emplace(key, id);
            if (s.mode == submit_mode::accept) {
                rec.outcome = WB_SUBMIT_ACCEPTED;
                rec.run_id = id;
            } else {
                rec.outcome = WB_SUBMIT_HELD;
            }
        }
        if (rec.outcome != WB_SUBMIT_REFUSED) {
            delivery_id = "dlv_" + std::to_string(s.submits.size() + 1);
        }
        run_id = rec.run_id;
        s.submits.push_back(rec);
        ++s.uncommitted;
    }
    s.submits_cv.notify_all();

    const int retry_after = rec.outcome == WB_SUBMIT_REFUSED && (rec.reason == "overloaded" ||
                                                                 rec.reason == "store_unavailable")
                                ? std::max(1, s.retry_after)
                                : 0;
    auto complete = [&s, done, user, status = rec.outcome, run_id, delivery_id, reason = rec.reason,
                     retry_after] {
        {
            std::lock_guard lock(s.mu);
            --s.uncommitted;
        }
        wb_submit_outcome outcome{};
        outcome.struct_size = sizeof(wb_submit_outcome);
        outcome.status = status;
        outcome.run_id = as_wb(run_id);
        outcome.delivery_id = as_wb(delivery_id);
        outcome.reason = as_wb(reason);
        outcome.retry_after_seconds = retry_after;
        done(user, &outcome);
    };
    {
        std::lock_guard lock(s.mu);
        if (s.paused) {
            s.deferred.push_back(std::move(complete));
            return WB_OK;
        }
    }
    // Never inside submit(): a real host completes after its commit, on its own thread.
    s.post(std::chrono::milliseconds(0), std::move(complete));
    return WB_OK;
}

wb_status host_respond(wb_host* h, wb_request_ctx* ctx, const wb_http_response* response) {
    auto& s = connector_harness::impl::self(h);
    std::shared_ptr<pending_reply::state> st;
    {
        std::lock_guard lock(s.mu);
        auto it = s.in_flight.find(ctx);
        if (it == s.in_flight.end()) {
            s.violations.push_back("respond: unknown or already answered request");
            return WB_ERR_INVALID;
        }
        if (s.uncommitted > 0 && s.in_flight.size() == 1) {
            s.violations.push_back("respond: answered while a submit was not yet committed");
        }
        st = it->second;
        s.in_flight.erase(it);
    }
    module_reply reply;
    if (response == nullptr || response->struct_size < sizeof(wb_http_response)) {
        s.violation("respond: null response or short struct_size");
        reply.status = 500;
    } else {
        reply.status = response->status;
        for (std::size_t i = 0; i < response->header_count; ++i) {
            reply.headers.emplace_back(to_string(response->headers[i].name),
                                       to_string(response->headers[i].value));
        }
        reply.body = to_string(response->body);
    }
    {
        std::lock_guard lock(st->mu);
        st->reply = std::move(reply);
        st->done = true;
    }
    st->cv.notify_all();
    return WB_OK;
}

wb_status host_register_subscription(wb_host* h, const wb_subscription_request* request,
                                     char* error_buf, std::size_t error_buf_size) {
    auto& s = connector_harness::impl::self(h);
    if (request == nullptr) {
        return WB_ERR_INVALID;
    }
    std::string id = to_string(request->id);
    std::lock_guard lock(s.mu);
    if (id.empty() || s.subscribed.count(id) != 0 ||
        std::find(s.registered.begin(), s.registered.end(), id) != s.registered.end()) {
        if (error_buf != nullptr && error_buf_size > 0) {
            std::snprintf(error_buf, error_buf_size, "subscription id is empty or taken");
        }
        return WB_ERR_INVALID;
    }
    s.registered.push_back(std::move(id));
    return WB_OK;
}

wb_status host_post_task(wb_host* h, std::int64_t delay_ms, wb_task_fn fn, void* user) {
    if (fn == nullptr) {
        return WB_ERR_INVALID;
    }
    connector_harness::impl::self(h).post(
        std::chrono::milliseconds(std::max<std::int64_t>(0, delay_ms)), [fn, user] { fn(user); });
    return WB_OK;
}

int host_has_capacity(wb_host* h) {
    return connector_harness::impl::self(h).capacity.load() ? 1 : 0;
}

wb_status host_store_attachment(wb_host* h, wb_str bytes, char* ref_buf, std::size_t ref_buf_size) {
    auto& s = connector_harness::impl::self(h);
    auto ref = s.blobs.put(std::string_view(bytes.data == nullptr ? "" : bytes.data, bytes.size));
    if (!ref) {
        return WB_ERR_BUSY;
    }
    if (ref_buf == nullptr || ref_buf_size < ref->size() + 1) {
        return WB_ERR_INVALID;
    }
    std::memcpy(ref_buf, ref->c_str(), ref->size() + 1);
    return WB_OK;
}

} // namespace wopbridge::testing::harness_detail
