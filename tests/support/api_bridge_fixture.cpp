#include "support/api_bridge_fixture.hpp"

#include "store/store.hpp"

#include <chrono>

namespace wopbridge::testing {

void api_bridge_fixture::start_stack(std::unique_ptr<run_starter> starter,
                                     const http::api_options& api, int threads) {
    settings_.host_key_file = dir_.file("host.key");
    sqlite_options o;
    o.path = dir_.file("bridge.db");
    auto st = open_sqlite_store(o);
    ASSERT_TRUE(st.has_value()) << st.error().message;
    bridge_ = std::make_unique<bridge>(settings_, std::move(*st), std::move(starter), clock_,
                                       random_);
    ASSERT_TRUE(bridge_->start().has_value());
    http::server_options so;
    so.host = "127.0.0.1";
    so.port = 0;
    so.threads = threads;
    so.worker_threads = 2;
    server_ = std::make_unique<http::server>(so);
    api_ = std::make_unique<http::http_api>(api, *bridge_, nullptr, server_->scheduler());
    ASSERT_TRUE(server_->start(*api_).has_value());
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
}

void api_bridge_fixture::TearDown() {
    if (server_) {
        server_->stop(std::chrono::seconds(10));
    }
    server_.reset();
    api_.reset();
    if (bridge_) {
        bridge_->stop();
    }
    bridge_.reset();
}

http_reply api_bridge_fixture::call(const std::string& method, const std::string& path,
                                    const std::string& body, const std::string& key,
                                    http_headers headers) {
    http_call c;
    c.method = method;
    c.url = base_ + path;
    c.body = body;
    c.headers = std::move(headers);
    if (!key.empty()) {
        c.headers.emplace_back("Authorization", "Bearer " + key);
    }
    if (!body.empty()) {
        c.headers.emplace_back("Content-Type", "application/json");
    }
    return perform(c);
}

} // namespace wopbridge::testing
