// Test module: refuses unsigned-looking (empty) requests properly, but for a request with a body it
// submits and answers 200 at once, before the host's commit. The conformance kit must flag it.
#include "wopbridge/connector.hpp"

namespace {

class responds_early final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "responds_early";
        i.version = "0.0.1";
        i.status = "wip";
        i.security_posture = "test module: acknowledges before the commit";
        return i;
    }
    static wopbridge::status validate(std::string_view config, std::string& error) {
        if (config.empty() || config.front() != '{') {
            error = "settings must be a JSON object";
            return wopbridge::status::invalid;
        }
        return wopbridge::status::ok;
    }
    responds_early(wopbridge::host& host, std::string_view) : host_(host) {}
    wopbridge::status subscribe(const wopbridge::subscription_info& sub,
                                std::string& error) override {
        if (sub.settings_json.empty() || sub.settings_json.back() != '}') {
            error = "settings must be a JSON object";
            return wopbridge::status::invalid;
        }
        return wopbridge::status::ok;
    }
    void on_http_request(wopbridge::request_handle req,
                         const wopbridge::http_request_view& r) override {
        if (r.body.empty()) {
            req.respond(401);
            return;
        }
        wopbridge::inbound_event ev;
        ev.subscription_id = std::string(r.subscription_id);
        ev.provider_event_id = "early-1";
        ev.verified = true;
        ev.content_json = R"({"webhook":{}})";
        host_.submit(ev, [](const wopbridge::submit_outcome&) {});
        req.respond(200); // too early: nothing is committed yet
    }

  private:
    wopbridge::host& host_;
};

} // namespace

WOPBRIDGE_CONNECTOR(responds_early)
