#pragma once
// The SMS (Twilio-compatible) connector instance: subscriptions and their effective settings,
// request handling (verify -> classify -> submit -> TwiML answer after the host's outcome) and
// graceful stop.
// Written against the C ABI types; entry.cpp exports it.

#include "sms/protocol.hpp"
#include "sms/settings.hpp"

#include <wopbridge/connector.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace wopbridge::sms {

class connector {
public:
    connector(const wb_host_api* api, wb_host* host, settings base);

    wb_status subscribe(const wb_subscription& sub, std::string& error);
    void unsubscribe(std::string_view id);
    // Never blocks; answers through api->respond (now, or from the submit completion).
    void on_http_request(wb_request_ctx* ctx, const wb_http_request& request);
    void stop(std::int64_t deadline_ms);

private:
    struct submit_context;
    static void on_submit_done(void* user, const wb_submit_outcome* outcome);

    void handle(wb_request_ctx* ctx, const wb_http_request& request);
    void respond(wb_request_ctx* ctx, int status, std::string_view content_type,
                 std::string_view body, int retry_after_seconds = 0);
    void respond_error(wb_request_ctx* ctx, int status, std::string_view code,
                       std::string_view message, int retry_after_seconds = 0);
    void log(wb_log_level level, std::string_view message);
    void finish_one();

    const wb_host_api* api_;
    wb_host* host_;
    const settings base_;

    std::shared_mutex subs_mu_;
    std::unordered_map<std::string, std::shared_ptr<const settings>> subs_;

    std::mutex flight_mu_;
    std::condition_variable flight_cv_;
    int in_flight_ = 0;
    bool stopping_ = false;
};

} // namespace wopbridge::sms
