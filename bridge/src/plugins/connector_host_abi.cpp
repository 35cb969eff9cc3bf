// The wb_host_api table a module calls back into: every entry is noexcept, checks its arguments
// and the instance's phase, and turns a host-side exception into a status.
#include "plugins/connector_host_impl.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <tuple>
#include <utility>

namespace wopbridge {

using namespace plugin_detail;

instance* connector_host::impl::inst_of(wb_host* h) noexcept {
    return h != nullptr ? context_of(h)->inst : nullptr;
}

void connector_host::impl::api_log(wb_host* h, wb_log_level level, wb_str message) noexcept {
    instance* inst = inst_of(h);
    if (inst == nullptr) {
        return;
    }
    try {
        std::string_view lvl = "info";
        switch (level) {
        case WB_LOG_DEBUG:
            lvl = "debug";
            break;
        case WB_LOG_INFO:
            lvl = "info";
            break;
        case WB_LOG_WARN:
            lvl = "warn";
            break;
        case WB_LOG_ERROR:
            lvl = "error";
            inst->errors++;
            break;
        }
        context_of(h)->owner->emit_log(lvl, inst->name, view(message));
    } catch (...) {
    }
}

std::int64_t connector_host::impl::api_now_ms(wb_host* h) noexcept {
    try {
        return h != nullptr ? context_of(h)->owner->clock.now_ms() : 0;
    } catch (...) {
        return 0;
    }
}

wb_status connector_host::impl::api_random_bytes(wb_host* h, std::uint8_t* out,
                                                 std::size_t n) noexcept {
    if (h == nullptr || (out == nullptr && n != 0)) {
        return WB_ERR_INVALID;
    }
    try {
        wopbridge::lock_guard lk(
            context_of(h)->owner->random_mu); // random sources need not be thread-safe
        context_of(h)->owner->random.fill(out, n);
        return WB_OK;
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

wb_status connector_host::impl::api_submit(wb_host* h, const wb_inbound_event* ev,
                                           wb_submit_done_fn done, void* user) noexcept {
    instance* inst = inst_of(h);
    if (inst == nullptr || ev == nullptr || done == nullptr ||
        ev->struct_size < sizeof(wb_inbound_event)) {
        return WB_ERR_INVALID;
    }
    try {
        return context_of(h)->owner->submit(*inst, *ev, done, user);
    } catch (...) {
        inst->errors++;
        return WB_ERR_INTERNAL;
    }
}

wb_status connector_host::impl::submit(instance& inst, const wb_inbound_event& ev,
                                       wb_submit_done_fn done, void* user) {
    // Allowed from create on: a listener started in start() may submit before start returns.
    const phase ph = inst.state.load();
    if (ph == phase::stopped || ph == phase::destroyed) {
        return WB_ERR_STATE;
    }
    inbound_submission s;
    s.subscription_id = std::string(view(ev.subscription_id));
    s.provider_event_id = std::string(view(ev.provider_event_id));
    s.received_at = ev.received_at_ms != 0 ? ev.received_at_ms : clock.now_ms();
    s.verified = ev.verified != 0;
    s.content_json = std::string(view(ev.content_json));
    // A connector submits only for subscriptions it was handed.
    if (s.subscription_id.empty() || !inst.subscribed(s.subscription_id)) {
        host_log(inst, "warn",
                 "submit refused: subscription '" + s.subscription_id +
                     "' is not one of this connector's");
        inst.errors++;
        return WB_ERR_INVALID;
    }
    boost::system::error_code ec;
    const auto content = boost::json::parse(s.content_json, ec);
    if (ec || !content.is_object() || content.as_object().size() != 1) {
        host_log(inst, "warn",
                 "submit refused: content_json must be a JSON object with one "
                 "per-source key");
        inst.errors++;
        return WB_ERR_INVALID;
    }

    // 0 = waiting, 1 = completed, 2 = cancelled (the sink threw before calling back).
    auto once = std::make_shared<std::atomic<int>>(0);
    inst.add(&instance::inflight_submits, +1);
    auto callback = [this, ip = &inst, done, user, once](submit_result r) {
        int expected = 0;
        if (!once->compare_exchange_strong(expected, 1)) {
            return;
        }
        // Module code never runs on the bridge's store/engine thread.
        enqueue(work_item{nullptr, [this, ip, done, user, r = std::move(r)] {
                              call_done(*ip, r, done, user);
                              ip->add(&instance::inflight_submits, -1);
                          }});
    };
    try {
        sink.submit(s, std::move(callback));
    } catch (...) {
        int expected = 0;
        if (once->compare_exchange_strong(expected, 2)) {
            inst.add(&instance::inflight_submits, -1);
            return WB_ERR_INTERNAL;
        }
    }
    inst.submits++;
    return WB_OK;
}

namespace {

std::pair<wb_submit_status, std::string_view> submit_outcome_of(submit_status s) noexcept {
    switch (s) {
    case submit_status::accepted:
        return {WB_SUBMIT_ACCEPTED, {}};
    case submit_status::duplicate:
        return {WB_SUBMIT_DUPLICATE, {}};
    case submit_status::held:
        return {WB_SUBMIT_HELD, {}};
    case submit_status::not_active:
        return {WB_SUBMIT_REFUSED, "subscription_not_active"};
    case submit_status::signature_invalid:
        return {WB_SUBMIT_REFUSED, "signature_invalid"};
    case submit_status::not_found:
        return {WB_SUBMIT_REFUSED, "not_found"};
    case submit_status::invalid:
        return {WB_SUBMIT_REFUSED, "invalid"};
    case submit_status::overloaded:
        return {WB_SUBMIT_REFUSED, "overloaded"};
    case submit_status::unavailable:
        return {WB_SUBMIT_REFUSED, "store_unavailable"};
    }
    return {wb_submit_status{}, {}}; // as a value-initialized outcome leaves it
}

} // namespace

void connector_host::impl::call_done(instance& inst, const submit_result& r, wb_submit_done_fn done,
                                     void* user) {
    wb_submit_outcome o{};
    o.struct_size = sizeof(wb_submit_outcome);
    // A refusal's reason is the ABI's word for it (connector.h), not the bridge's enum name.
    std::string_view reason;
    std::tie(o.status, reason) = submit_outcome_of(r.status);
    const bool refused = o.status == WB_SUBMIT_REFUSED;
    o.run_id = refused ? wb_str{} : str(r.run_id);
    o.delivery_id = refused ? wb_str{} : str(r.delivery_id);
    o.reason = str(reason);
    o.retry_after_seconds =
        (r.status == submit_status::overloaded || r.status == submit_status::unavailable)
            ? std::max(1, r.retry_after_seconds)
            : 0;
    try {
        done(user, &o);
    } catch (...) {
        inst.errors++;
        host_log(inst, "error", "exception escaped the submit completion callback");
    }
}

wb_status connector_host::impl::api_respond(wb_host* h, wb_request_ctx* ctx,
                                            const wb_http_response* resp) noexcept {
    instance* inst = inst_of(h);
    if (inst == nullptr) {
        return WB_ERR_INVALID;
    }
    try {
        return context_of(h)->owner->respond(*inst, reinterpret_cast<std::uintptr_t>(ctx), resp);
    } catch (...) {
        inst->errors++;
        return WB_ERR_INTERNAL;
    }
}

wb_status connector_host::impl::respond(instance& inst, std::uint64_t id,
                                        const wb_http_response* resp) {
    std::optional<pending_request> p;
    {
        wopbridge::lock_guard lk(req_mu);
        auto it = pending.find(id);
        if (it != pending.end() && it->second.inst == &inst) {
            p = std::move(it->second);
            pending.erase(it);
        }
    }
    if (!p) {
        inst.errors++;
        host_log(inst, "warn", "late or repeated respond ignored");
        return WB_ERR_STATE;
    }
    inst.responses++;
    const auto refuse = [&](std::string_view why) {
        inst.errors++;
        host_log(inst, "error",
                 std::string("invalid response (") + std::string(why) + "); the host answered 500");
        deliver(*p, ingest_reply{
                        500,
                        {{"content-type", "application/json"}},
                        error_body("internal_error", "the connector gave an invalid response")});
        return WB_ERR_INVALID;
    };
    if (resp == nullptr || resp->struct_size < sizeof(wb_http_response)) {
        return refuse("missing or short struct");
    }
    if (resp->status < 100 || resp->status > 599) {
        return refuse("status out of range");
    }
    if (resp->header_count > 0 && resp->headers == nullptr) {
        return refuse("null headers");
    }
    ingest_reply reply;
    reply.status = resp->status;
    for (std::size_t i = 0; i < resp->header_count; ++i) {
        const auto name = view(resp->headers[i].name);
        const auto value = view(resp->headers[i].value);
        if (name.empty() || !std::all_of(name.begin(), name.end(), token_char) ||
            !header_value_ok(value)) {
            return refuse("bad header");
        }
        std::string lname = lower(name);
        // Framing belongs to the HTTP layer.
        if (lname == "content-length" || lname == "transfer-encoding" || lname == "connection") {
            continue;
        }
        reply.headers.emplace_back(std::move(lname), std::string(value));
    }
    reply.body = std::string(view(resp->body));
    deliver(*p, std::move(reply));
    return WB_OK;
}

wb_status connector_host::impl::api_register_subscription(wb_host* h,
                                                          const wb_subscription_request* req,
                                                          char* error_buf,
                                                          std::size_t error_buf_size) noexcept {
    instance* inst = inst_of(h);
    if (inst == nullptr || req == nullptr || req->struct_size < sizeof(wb_subscription_request)) {
        copy_error("invalid request", error_buf, error_buf_size);
        return WB_ERR_INVALID;
    }
    try {
        return context_of(h)->owner->register_subscription(*inst, *req, error_buf, error_buf_size);
    } catch (...) {
        inst->errors++;
        copy_error("internal error", error_buf, error_buf_size);
        return WB_ERR_INTERNAL;
    }
}

wb_status connector_host::impl::api_post_task(wb_host* h, std::int64_t delay_ms, wb_task_fn fn,
                                              void* user) noexcept {
    instance* inst = inst_of(h);
    if (inst == nullptr || fn == nullptr) {
        return WB_ERR_INVALID;
    }
    try {
        const phase ph = inst->state.load();
        if (ph == phase::stopped || ph == phase::destroyed) {
            return WB_ERR_STATE;
        }
        inst->add(&instance::inflight_tasks, +1);
        work_item item{inst, [inst, fn, user] {
                           try {
                               fn(user);
                           } catch (...) {
                               inst->errors++;
                           }
                           inst->add(&instance::inflight_tasks, -1);
                       }};
        impl* self = context_of(h)->owner;
        if (delay_ms <= 0) {
            self->enqueue(std::move(item));
        } else {
            self->schedule(self->clock.now_ms() + delay_ms, std::move(item));
        }
        return WB_OK;
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

int connector_host::impl::api_has_capacity(wb_host* h) noexcept {
    try {
        return h != nullptr && context_of(h)->owner->sink.has_capacity() ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

wb_status connector_host::impl::api_store_attachment(wb_host* h, wb_str bytes, char* ref_buf,
                                                     std::size_t ref_buf_size) noexcept {
    if (h == nullptr || ref_buf == nullptr || (bytes.data == nullptr && bytes.size != 0)) {
        return WB_ERR_INVALID;
    }
    try {
        blob_store* blobs = context_of(h)->owner->blobs.get();
        if (blobs == nullptr) {
            return WB_ERR_UNSUPPORTED;
        }
        auto ref = blobs->put(std::string_view(bytes.data, bytes.size));
        if (!ref) {
            return WB_ERR_BUSY; // the disk refused: the caller refuses the message, retry later
        }
        if (ref->size() + 1 > ref_buf_size) {
            return WB_ERR_INVALID;
        }
        std::copy(ref->begin(), ref->end(), ref_buf);
        ref_buf[ref->size()] = '\0';
        return WB_OK;
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

wb_status connector_host::impl::register_subscription(instance& inst,
                                                      const wb_subscription_request& req,
                                                      char* error_buf, std::size_t error_buf_size) {
    if (!options.register_subscription) {
        copy_error("this host does not register discovered subscriptions", error_buf,
                   error_buf_size);
        return WB_ERR_UNSUPPORTED;
    }
    discovered_subscription d;
    d.connector = inst.name;
    d.id = std::string(view(req.id));
    d.source = std::string(view(req.source));
    d.workflow_id = std::string(view(req.workflow_id));
    d.settings_json = std::string(view(req.settings_json));
    if (d.settings_json.empty()) {
        d.settings_json = "{}";
    }
    if (d.id.empty() || !source_from(d.source)) {
        copy_error("a subscription needs an id and a known source", error_buf, error_buf_size);
        return WB_ERR_INVALID;
    }
    if (auto err = options.register_subscription(d)) {
        copy_error(*err, error_buf, error_buf_size);
        return WB_ERR_INVALID;
    }
    // subscribe() for it runs later on a worker, outside the connector's current call.
    instance* ip = &inst;
    sub_entry entry{d.source, d.workflow_id, d.settings_json, {}};
    enqueue(work_item{nullptr, [this, ip, id = d.id, entry] {
                          if (ip->state.load() != phase::running) {
                              return; // do not queue behind a stop that waits for the workers
                          }
                          wopbridge::lock_guard control(ip->control_mu);
                          if (ip->state.load() == phase::running) {
                              if (auto r = subscribe_locked(*ip, id, entry); !r) {
                                  host_log(*ip, "warn", r.error().message);
                              }
                          }
                      }});
    return WB_OK;
}

} // namespace wopbridge
