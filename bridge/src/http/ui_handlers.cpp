// GET /ui, /ui/ and /ui/{asset}: the dashboard's embedded static files. The page is inert HTML plus
// ES modules that call the REST API with the API key the operator signs in with (kept in the tab's
// sessionStorage); nothing here reads the store or needs a key.

#include "http/error_mapping.hpp"
#include "http/ui_assets.hpp"

#include <algorithm>

namespace wopbridge::http::ui {

namespace {

constexpr std::string_view csp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

void security_headers(http_response& res) {
    res.set_header("content-security-policy", std::string(csp));
    res.set_header("x-content-type-options", "nosniff");
    res.set_header("referrer-policy", "no-referrer");
    res.set_header("x-frame-options", "DENY");
    res.set_header("cross-origin-opener-policy", "same-origin");
}

// If-None-Match: "*" or a comma-separated list of (possibly weak) validators.
bool matches(std::string_view header, std::string_view etag) {
    while (!header.empty()) {
        auto comma = header.find(',');
        auto item = header.substr(0, comma);
        header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') {
            item.remove_prefix(1);
        }
        while (!item.empty() && item.back() == ' ') {
            item.remove_suffix(1);
        }
        if (item.substr(0, 2) == "W/") {
            item.remove_prefix(2);
        }
        if (item == "*" || item == etag) {
            return true;
        }
    }
    return false;
}

} // namespace

std::string_view content_security_policy() noexcept { return csp; }

const asset* find_asset(std::string_view name) noexcept {
    auto all = assets();
    auto it = std::find_if(all.begin(), all.end(), [&](const asset& a) { return a.name == name; });
    return it == all.end() ? nullptr : &*it;
}

http_response serve(const http_request& req, std::string_view name) {
    const asset* a = find_asset(name);
    if (!a) {
        auto res = error_response(404, "not_found", "no such dashboard asset");
        security_headers(res);
        return res;
    }
    http_response res;
    // Unversioned URLs: always revalidate, cheaply, by ETag.
    res.set_header("cache-control", "no-cache");
    res.set_header("etag", std::string(a->etag));
    security_headers(res);
    if (auto inm = req.header("if-none-match"); inm && matches(*inm, a->etag)) {
        res.status = 304;
        return res;
    }
    res.status = 200;
    res.set_header("content-type", std::string(a->content_type));
    res.body = std::string(a->body);
    return res;
}

} // namespace wopbridge::http::ui
