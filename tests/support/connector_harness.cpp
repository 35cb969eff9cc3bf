#include "support/connector_harness.hpp"
#include "support/connector_harness_impl.hpp"

#include "support/build_paths.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>

namespace wopbridge::testing {

using namespace harness_detail;

// ---------------------------------------------------------------------------------------------
// pending_reply

bool pending_reply::ready() const {
    std::lock_guard lock(state_->mu);
    return state_->done;
}

std::optional<module_reply> pending_reply::wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->done; })) {
        return std::nullopt;
    }
    return state_->reply;
}

std::string module_reply::header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
        if (iequals(n, name)) {
            return v;
        }
    }
    return {};
}

bool module_reply::has_header(std::string_view name) const {
    return std::any_of(headers.begin(), headers.end(),
                       [&](const auto& h) { return iequals(h.first, name); });
}

// ---------------------------------------------------------------------------------------------
// connector_harness

std::string connector_harness::module_path(std::string_view name) {
    return std::string(WOPBRIDGE_MODULE_DIR) + "/" + std::string(name) + ".so";
}

connector_harness::connector_harness(std::string_view name) : impl_(std::make_unique<impl>()) {
    const std::string path =
        name.find('/') == std::string_view::npos ? module_path(name) : std::string(name);
    impl_->dl = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (impl_->dl == nullptr) {
        const char* err = ::dlerror();
        throw std::runtime_error("dlopen " + path + ": " + (err ? err : "unknown error"));
    }
    auto entry = reinterpret_cast<wb_entry_fn>(::dlsym(impl_->dl, WOPBRIDGE_ENTRY_SYMBOL));
    if (entry == nullptr) {
        ::dlclose(impl_->dl);
        throw std::runtime_error(path + ": no " WOPBRIDGE_ENTRY_SYMBOL " symbol");
    }
    descriptor_ = entry();
    if (descriptor_ == nullptr) {
        ::dlclose(impl_->dl);
        throw std::runtime_error(path + ": entry returned no descriptor");
    }
    impl_->desc = descriptor_;
}

connector_harness::~connector_harness() {
    if (impl_->started) {
        stop();
    }
    destroy();
    impl_->drain();
    // Join the worker before unloading the code its tasks point into.
    void* dl = impl_->dl;
    impl_.reset();
    if (dl != nullptr) {
        ::dlclose(dl);
    }
}

std::string connector_harness::descriptor_problem() const {
    const auto& d = *descriptor_;
    if (d.struct_size < sizeof(wb_connector_descriptor)) {
        return "descriptor struct_size is smaller than this host's descriptor";
    }
    if (d.abi_major != WOPBRIDGE_ABI_MAJOR || d.abi_minor > WOPBRIDGE_ABI_MINOR) {
        return "descriptor ABI version is not loadable by this host";
    }
    for (auto [field, value] : {std::pair{"name", d.name},
                                {"version", d.version},
                                {"status", d.status},
                                {"security_posture", d.security_posture},
                                {"sdk_build_id", d.sdk_build_id},
                                {"source", d.source},
                                {"config_schema_json", d.config_schema_json},
                                {"subscription_schema_json", d.subscription_schema_json}}) {
        if (value == nullptr || *value == '\0') {
            return std::string("descriptor field ") + field + " is empty";
        }
    }
    const std::string status = d.status;
    if (status != "stable" && status != "alpha" && status != "wip") {
        return "descriptor status is not stable|alpha|wip";
    }
    const std::string source = d.source;
    static const std::set<std::string> sources{"webhook", "email", "form", "queue", "schedule"};
    if (sources.count(source) == 0) {
        return "descriptor source is not a trigger source kind";
    }
    if (std::string_view(d.security_posture).find('\n') != std::string_view::npos) {
        return "descriptor security_posture is not one line";
    }
    for (auto [field, value] : {std::pair{"config_schema_json", d.config_schema_json},
                                {"subscription_schema_json", d.subscription_schema_json}}) {
        boost::system::error_code ec;
        auto v = boost::json::parse(value, ec);
        if (ec || !v.is_object()) {
            return std::string("descriptor ") + field + " is not a JSON object";
        }
    }
    if (!d.validate || !d.create || !d.start || !d.subscribe || !d.unsubscribe || !d.stop ||
        !d.destroy) {
        return "descriptor lacks a lifecycle function";
    }
    const bool http = (d.capabilities & WB_CAP_HTTP_INGEST) != 0;
    if (http != (d.on_http_request != nullptr)) {
        return "on_http_request must be present exactly when WB_CAP_HTTP_INGEST is set";
    }
    return {};
}

std::pair<wb_status, std::string> connector_harness::validate(std::string_view config_json) const {
    char buf[512] = {};
    wb_status st = descriptor_->validate(as_wb(config_json), buf, sizeof buf);
    return {st, from_buf(buf, sizeof buf)};
}

wb_status connector_harness::create(std::string_view config_json, std::string* error) {
    if (impl_->conn != nullptr) {
        return WB_ERR_STATE;
    }
    char buf[512] = {};
    wb_connector* out = nullptr;
    wb_status st =
        descriptor_->create(&impl_->api, impl_->host(), as_wb(config_json), &out, buf, sizeof buf);
    if (error != nullptr) {
        *error = from_buf(buf, sizeof buf);
    }
    if (st == WB_OK) {
        if (out == nullptr) {
            impl_->violation("create: WB_OK without an instance");
            return WB_ERR_INTERNAL;
        }
        impl_->conn = out;
    }
    return st;
}

wb_status connector_harness::start() {
    if (impl_->conn == nullptr) {
        return WB_ERR_STATE;
    }
    wb_status st = descriptor_->start(impl_->conn);
    impl_->started = st == WB_OK;
    return st;
}

wb_status connector_harness::subscribe(const subscription_spec& sub, std::string* error) {
    if (impl_->conn == nullptr) {
        return WB_ERR_STATE;
    }
    const std::string ingest_url =
        sub.ingest_url.empty() ? std::string(public_base) + "/v1/ingest/" + sub.id : sub.ingest_url;
    wb_subscription s{};
    s.struct_size = sizeof(wb_subscription);
    s.id = as_wb(sub.id);
    s.source = as_wb(sub.source);
    s.workflow_id = as_wb(sub.workflow_id);
    s.settings_json = as_wb(sub.settings_json);
    s.ingest_url = as_wb(ingest_url);
    char buf[512] = {};
    wb_status st = descriptor_->subscribe(impl_->conn, &s, buf, sizeof buf);
    if (error != nullptr) {
        *error = from_buf(buf, sizeof buf);
    }
    if (st == WB_OK) {
        std::lock_guard lock(impl_->mu);
        impl_->subscribed.insert(sub.id);
    }
    return st;
}

wb_status connector_harness::unsubscribe(std::string_view id) {
    if (impl_->conn == nullptr) {
        return WB_ERR_STATE;
    }
    wb_status st = descriptor_->unsubscribe(impl_->conn, as_wb(id));
    if (st == WB_OK) {
        std::lock_guard lock(impl_->mu);
        impl_->subscribed.erase(std::string(id));
    }
    return st;
}

wb_status connector_harness::stop(std::chrono::milliseconds grace) {
    if (impl_->conn == nullptr || !impl_->started) {
        return WB_ERR_STATE;
    }
    resume_submit_completion();
    wb_status st = descriptor_->stop(impl_->conn, impl_->now.load() + grace.count());
    impl_->started = false;
    impl_->drain();
    return st;
}

void connector_harness::destroy() {
    if (impl_->conn == nullptr) {
        return;
    }
    resume_submit_completion();
    impl_->drain();
    descriptor_->destroy(impl_->conn);
    impl_->conn = nullptr;
}

wb_status connector_harness::bring_up(std::string_view config_json, const subscription_spec& sub,
                                      std::string* error) {
    wb_status st = create(config_json, error);
    if (st != WB_OK) {
        return st;
    }
    st = start();
    if (st != WB_OK) {
        return st;
    }
    return subscribe(sub, error);
}

pending_reply connector_harness::send_async(const http_request_spec& request) {
    auto st = std::make_shared<pending_reply::state>();
    if (impl_->conn == nullptr || descriptor_->on_http_request == nullptr) {
        impl_->violation("send: no instance or no on_http_request");
        return pending_reply(st);
    }
    // Local copies: the module may only borrow them for the duration of the call.
    std::string sub_id = request.subscription_id;
    std::string method = request.method;
    std::string target = request.target.empty() ? "/v1/ingest/" + sub_id : request.target;
    std::string public_url =
        request.public_url.empty() ? std::string(public_base) + target : request.public_url;
    std::string body = request.body;
    std::string remote = request.remote_address;
    header_list headers;
    for (const auto& [n, v] : request.headers) {
        headers.emplace_back(lower(n), v);
    }
    std::vector<wb_header> wire;
    wire.reserve(headers.size());
    for (const auto& [n, v] : headers) {
        wire.push_back(wb_header{as_wb(n), as_wb(v)});
    }
    wb_http_request req{};
    req.struct_size = sizeof(wb_http_request);
    req.subscription_id = as_wb(sub_id);
    req.method = as_wb(method);
    req.target = as_wb(target);
    req.public_url = as_wb(public_url);
    req.headers = wire.data();
    req.header_count = wire.size();
    req.body = as_wb(body);
    req.remote_address = as_wb(remote);
    req.received_at_ms = request.received_at_ms != 0 ? request.received_at_ms : impl_->now.load();

    auto* ctx = reinterpret_cast<wb_request_ctx*>(st.get());
    {
        std::lock_guard lock(impl_->mu);
        impl_->in_flight.emplace(ctx, st);
    }
    descriptor_->on_http_request(impl_->conn, ctx, &req);
    // Poison the borrowed buffers so a module that kept pointers reads garbage, not valid data.
    std::fill(body.begin(), body.end(), '#');
    for (auto& [n, v] : headers) {
        std::fill(v.begin(), v.end(), '#');
    }
    return pending_reply(st);
}

module_reply connector_harness::send(const http_request_spec& request,
                                     std::chrono::milliseconds timeout) {
    auto pending = send_async(request);
    auto reply = pending.wait(timeout);
    return reply ? *reply : module_reply{};
}

void connector_harness::set_now_ms(std::int64_t ms) noexcept {
    impl_->now.store(ms);
}

std::int64_t connector_harness::now_ms() const noexcept {
    return impl_->now.load();
}

void connector_harness::set_submit_mode(submit_mode mode, std::string reason,
                                        int retry_after_seconds) {
    std::lock_guard lock(impl_->mu);
    impl_->mode = mode;
    impl_->refuse_reason = std::move(reason);
    impl_->retry_after = retry_after_seconds;
}

void connector_harness::pause_submit_completion() {
    std::lock_guard lock(impl_->mu);
    impl_->paused = true;
}

void connector_harness::resume_submit_completion() {
    std::vector<std::function<void()>> queued;
    {
        std::lock_guard lock(impl_->mu);
        impl_->paused = false;
        queued.swap(impl_->deferred);
    }
    for (auto& fn : queued) {
        impl_->post(std::chrono::milliseconds(0), std::move(fn));
    }
}

void connector_harness::set_capacity(bool has_capacity) noexcept {
    impl_->capacity.store(has_capacity);
}

std::vector<recorded_submit> connector_harness::submits() const {
    std::lock_guard lock(impl_->mu);
    return impl_->submits;
}

bool connector_harness::wait_for_submits(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mu);
    return impl_->submits_cv.wait_for(lock, timeout, [&] { return impl_->submits.size() >= n; });
}

std::vector<std::string> connector_harness::log_lines() const {
    std::lock_guard lock(impl_->mu);
    return impl_->logs;
}

std::vector<std::string> connector_harness::violations() const {
    std::lock_guard lock(impl_->mu);
    return impl_->violations;
}

std::vector<std::string> connector_harness::registered_subscriptions() const {
    std::lock_guard lock(impl_->mu);
    return impl_->registered;
}

std::filesystem::path connector_harness::attachment_dir() const {
    return impl_->blobs.directory();
}

std::optional<std::string> connector_harness::attachment(std::string_view ref) const {
    auto bytes = impl_->blobs.get(ref);
    if (!bytes) {
        return std::nullopt;
    }
    return *bytes;
}

} // namespace wopbridge::testing
