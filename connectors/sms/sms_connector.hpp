#pragma once
// The SMS (Twilio-compatible) connector: subscriptions and their effective settings, request
// handling (verify -> classify -> submit -> TwiML answer after the host's outcome) and graceful
// stop. Exported by entry.cpp through the SDK's C++ wrapper.

#include "sms/protocol.hpp"
#include "sms/settings.hpp"

#include <wopbridge/layered_settings_connector.hpp>

#include <memory>
#include <string_view>

namespace wopbridge::sms {

class sms_connector final : public layered_settings_connector<settings, &parse_connector_settings,
                                                              &apply_subscription_settings> {
  public:
    using layered_settings_connector::layered_settings_connector;

    static connector_info info();

  private:
    void handle(request_handle& req, const http_request_view& r, const settings& effective,
                std::shared_ptr<in_flight::ticket> ticket) override;
};

} // namespace wopbridge::sms
