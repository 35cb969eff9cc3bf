#pragma once
// The CLI client's HTTP calls to a running `wopbridge serve` (libcurl easy API, one request at a
// time). No Asio here: the client is a short-lived process.

#include <cstddef>
#include <string>
#include <vector>

namespace wopbridge::cli {

struct client_options {
    std::string url = "http://127.0.0.1:8080"; // base URL, no trailing slash needed
    std::string api_key;
    bool json = false;
};

struct client_response {
    long status = 0;       // 0 = transport error
    std::string body;
    std::string transport_error;
};

// libcurl's CURLOPT_WRITEFUNCTION for a response body collected into the std::string at `user`.
std::size_t append_body(char* data, std::size_t size, std::size_t n, void* user);

client_response http_call(const client_options& opts, const std::string& method,
                          const std::string& path, const std::string& body = {});

// Client subcommands; `group` is subscriptions | deliveries | dead-letters | runs.
int run_client(const std::string& group, const std::vector<std::string>& args);

} // namespace wopbridge::cli
