// Test module: a connector whose on_http_request blocks the calling thread (a module bug the host
// must survive). A request whose target contains "block" waits until the file named by the
// instance setting "releaseFile" exists (polled, at most 30 s), then answers late; any other
// request answers 200 at once. Every entry logs "entered <target>".
#include "wopbridge/connector.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace {

class blocks_in_request final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "blocks_in_request";
        i.version = "0.0.1";
        i.status = "alpha";
        i.security_posture = "test module: verifies nothing";
        i.source = "webhook";
        i.config_schema_json = R"({"type":"object"})";
        i.capabilities = WB_CAP_HTTP_INGEST;
        return i;
    }

    static wopbridge::status validate(std::string_view, std::string&) {
        return wopbridge::status::ok;
    }

    blocks_in_request(wopbridge::host& host, std::string_view config) : host_(host) {
        const std::string key = "\"releaseFile\":\"";
        if (auto at = config.find(key); at != std::string_view::npos) {
            auto from = at + key.size();
            release_file_ = std::string(config.substr(from, config.find('"', from) - from));
        }
    }

    wopbridge::status start() override { return wopbridge::status::ok; }
    wopbridge::status subscribe(const wopbridge::subscription_info&, std::string&) override {
        return wopbridge::status::ok;
    }
    wopbridge::status unsubscribe(std::string_view) override { return wopbridge::status::ok; }

    void on_http_request(wopbridge::request_handle req,
                         const wopbridge::http_request_view& r) override {
        host_.log(wopbridge::log_level::info, "entered " + std::string(r.target));
        if (r.target.find("block") != std::string_view::npos) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while (std::chrono::steady_clock::now() < until &&
                   !std::filesystem::exists(release_file_)) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5)); // the bug under test
            }
        }
        req.respond(200, {{"content-type", "text/plain"}}, "done");
    }

    wopbridge::status stop(std::int64_t) override { return wopbridge::status::ok; }

  private:
    wopbridge::host& host_;
    std::string release_file_;
};

} // namespace

WOPBRIDGE_CONNECTOR(blocks_in_request)
