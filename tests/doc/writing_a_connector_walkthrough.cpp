// docs/writing-a-connector.md, section 4 (the `hello` walk-through): its on_http_request and
// answer excerpts as members of a connector module, compiled against the SDK (blocks extracted by
// tests/doc/CMakeLists.txt, #line pointing at the doc). What the excerpts take as given (the
// class, `json_type`, `secret_for`, a subscribe that stores the secret) is defined here, outside
// the doc. check_walkthrough_module.py runs the conformance kit on it with a signed request, so
// the excerpts' verify -> submit -> answer-after-commit path runs
// (DocSnippets.WalkthroughModulePassesConnectorCheckWithASignedRequest).
#include "wopbridge/connector.hpp"
#include "wopbridge/json_util.hpp"
#include "wopbridge/signatures.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace {

const wopbridge::header_list json_type = {{"content-type", "application/json"}};

class walkthrough final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "walkthrough";
        i.version = "0.0.1";
        i.status = "wip";
        i.security_posture = "verifies an OpenWOP v1 signature (the doc's walk-through)";
        i.source = "webhook";
        i.subscription_schema_json =
            R"({"type":"object","additionalProperties":false,"required":["secret"],)"
            R"("properties":{"secret":{"type":"string","minLength":16,"writeOnly":true}}})";
        i.capabilities = WB_CAP_HTTP_INGEST;
        return i;
    }

    static wopbridge::status validate(std::string_view config, std::string& error) {
        return wopbridge::json::parse_flat_object(config.empty() ? "{}" : config, &error)
                   ? wopbridge::status::ok
                   : wopbridge::status::invalid;
    }

    walkthrough(wopbridge::host& host, std::string_view) : host_(host) {}

    wopbridge::status subscribe(const wopbridge::subscription_info& sub,
                                std::string& error) override {
        auto obj = wopbridge::json::parse_flat_object(sub.settings_json, &error);
        if (!obj || !obj->count("secret")) {
            error = "settings: {\"secret\": string} is required";
            return wopbridge::status::invalid;
        }
        std::lock_guard lk(mu_);
        secrets_[std::string(sub.id)] = obj->at("secret").text;
        return wopbridge::status::ok;
    }

    wopbridge::status unsubscribe(std::string_view id) override {
        std::lock_guard lk(mu_);
        secrets_.erase(std::string(id));
        return wopbridge::status::ok;
    }

#include "writing_a_connector_block_2.inc"

  private:
#include "writing_a_connector_block_3.inc"

    std::string secret_for(std::string_view id) {
        std::lock_guard lk(mu_);
        auto it = secrets_.find(std::string(id));
        return it == secrets_.end() ? std::string() : it->second;
    }

    wopbridge::host& host_;
    std::mutex mu_;
    std::map<std::string, std::string> secrets_;
};

} // namespace

WOPBRIDGE_CONNECTOR(walkthrough)
