#include "http/http_message.hpp"

#include <wopbridge/http_util.hpp>

#include <algorithm>
#include <cctype>

namespace wopbridge::http {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

} // namespace

std::optional<std::string_view> http_request::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (iequals(k, name)) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}

std::optional<std::string> http_request::query_param(std::string_view name) const {
    if (query.empty()) {
        return std::nullopt;
    }
    std::string_view rest = query;
    while (!rest.empty()) {
        auto amp = rest.find('&');
        auto pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        auto eq = pair.find('=');
        if (percent_decode_lenient(pair.substr(0, eq), true) == name) {
            return eq == std::string_view::npos ? std::string() : percent_decode_lenient(pair.substr(eq + 1), true);
        }
    }
    return std::nullopt;
}

http_request http_request::make(std::string method, std::string target, header_list headers,
                                std::string body, std::string remote) {
    http_request r;
    r.method = std::move(method);
    r.target = std::move(target);
    auto q = r.target.find('?');
    r.path = r.target.substr(0, q);
    r.query = q == std::string::npos ? std::string() : r.target.substr(q + 1);
    for (auto& [k, v] : headers) {
        r.headers.emplace_back(lower(k), std::move(v));
    }
    r.body = std::move(body);
    r.remote = std::move(remote);
    return r;
}

std::optional<std::string_view> http_response::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (iequals(k, name)) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}

void http_response::set_header(std::string name, std::string value) {
    for (auto& [k, v] : headers) {
        if (iequals(k, name)) {
            v = std::move(value);
            return;
        }
    }
    headers.emplace_back(std::move(name), std::move(value));
}

http_response http_response::json(int status, std::string body) {
    http_response r;
    r.status = status;
    r.headers.emplace_back("content-type", "application/json");
    r.body = std::move(body);
    return r;
}

http_response http_response::empty(int status) {
    http_response r;
    r.status = status;
    return r;
}

} // namespace wopbridge::http
