#include "outbound/delivery_request.hpp"

#include "contract/wire.hpp"

#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

namespace wopbridge::outbound {

std::string delivery_body(const std::string& workspace_id, const run_event& e) {
    boost::json::object o;
    o["runId"] = e.run_id;
    o["workspaceId"] = workspace_id;
    o["event"] = wire::run_event(e);
    return boost::json::serialize(o);
}

std::string secret_fingerprint(std::string_view secret) {
    return sig::to_hex(sig::sha256(secret)).substr(0, 8);
}

std::vector<std::pair<std::string, std::string>> delivery_headers(const signing_input& in,
                                                                  std::string_view body) {
    std::vector<std::pair<std::string, std::string>> h;
    std::string ts = std::to_string(in.timestamp_s);
    h.emplace_back("Content-Type", "application/json");
    h.emplace_back("User-Agent", "openwop-webhook-dispatcher/" + in.version);
    h.emplace_back("X-openwop-Webhook-Id", in.webhook_id);
    h.emplace_back("X-openwop-Event-Type", in.event_type);
    h.emplace_back("X-openwop-Timestamp", ts);
    h.emplace_back("X-openwop-Signature", sig::sign_openwop_v1(in.secret, in.timestamp_s, body));
    h.emplace_back("X-openwop-Signature-Algorithm", "v1");
    if (!in.standard_secret.empty()) {
        if (auto s = sig::sign_standard_webhooks(in.standard_secret, in.delivery_id,
                                                 in.timestamp_s, body)) {
            h.emplace_back("webhook-id", in.delivery_id);
            h.emplace_back("webhook-timestamp", ts);
            h.emplace_back("webhook-signature", *s);
        }
    }
    return h;
}

} // namespace wopbridge::outbound
