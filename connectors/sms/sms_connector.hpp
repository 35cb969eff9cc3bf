#pragma once
// The SMS (Twilio-compatible) connector: subscriptions and their effective settings, request
// handling (verify -> classify -> submit -> TwiML answer after the host's outcome) and graceful
// stop. Exported by entry.cpp through the SDK's C++ wrapper.

#include <wopbridge/in_flight.hpp>
#include "sms/protocol.hpp"
#include "sms/settings.hpp"

#include <wopbridge/connector.hpp>

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace wopbridge::sms {

class sms_connector final : public wopbridge::connector {
  public:
    static connector_info info();
    static status validate(std::string_view config, std::string& error);

    // Throws std::invalid_argument (a one-line reason, never a secret) on bad settings.
    sms_connector(wopbridge::host& host, std::string_view config);

    status subscribe(const subscription_info& sub, std::string& error) override;
    status unsubscribe(std::string_view id) override;
    void on_http_request(request_handle req, const http_request_view& r) override;
    status stop(std::int64_t deadline_ms) override;

  private:
    void handle(request_handle& req, const http_request_view& r,
                std::shared_ptr<in_flight::ticket> ticket);
    std::shared_ptr<const settings> settings_for(std::string_view subscription_id);

    wopbridge::host& host_;
    const settings base_;
    std::shared_mutex subs_mu_;
    std::unordered_map<std::string, std::shared_ptr<const settings>> subs_;
    in_flight in_flight_;
};

} // namespace wopbridge::sms
