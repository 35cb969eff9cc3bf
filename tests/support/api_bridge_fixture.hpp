#pragma once
// A real bridge on a temporary SQLite file behind a real http::server on 127.0.0.1:0, for the
// in-process API tests (ops routes, outbound webhooks): SetUp fills settings_ and calls
// start_stack(); TearDown stops the server before the bridge. call() is libcurl with an API key.
#include "app/bridge.hpp"
#include "http/api.hpp"
#include "http/server.hpp"
#include "runs/run_starter.hpp"
#include "support/http_client.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace wopbridge::testing {

class api_bridge_fixture : public ::testing::Test {
  protected:
    // Opens dir_/bridge.db, starts the bridge with settings_ and `starter`, then the server
    // (`threads` I/O threads, two workers) with the API under `api`. Asserts each step.
    void start_stack(std::unique_ptr<run_starter> starter, const http::api_options& api,
                     int threads);
    void TearDown() override;

    http_reply call(const std::string& method, const std::string& path,
                    const std::string& body = {}, const std::string& key = "hk_acme",
                    http_headers headers = {});

    temp_dir dir_;
    system_clock_source clock_;
    system_random_source random_;
    bridge_settings settings_;
    std::unique_ptr<bridge> bridge_;
    std::unique_ptr<http::server> server_;
    std::unique_ptr<http::http_api> api_;
    std::string base_;
};

} // namespace wopbridge::testing
