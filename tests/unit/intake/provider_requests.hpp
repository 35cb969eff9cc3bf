#pragma once
// A JSON webhook request as the provider catalogue tests build it.
#include "contract/intake.hpp"

#include <string>
#include <utility>
#include <vector>

namespace wopbridge::testing {

inline inbound_http_request json_post(std::string body,
                                      std::vector<std::pair<std::string, std::string>> headers) {
    inbound_http_request r;
    r.method = "POST";
    r.body = std::move(body);
    r.headers = std::move(headers);
    r.headers.emplace_back("content-type", "application/json");
    return r;
}

} // namespace wopbridge::testing
