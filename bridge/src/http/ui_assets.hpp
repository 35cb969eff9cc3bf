#pragma once
// The /ui dashboard: static files from bridge/ui/, embedded at build time (ui_assets.cpp is generated
// by bridge/src/http/embed_ui.cmake), and the response that serves one of them.

#include "http/http_message.hpp"

#include <span>
#include <string_view>

namespace wopbridge::http::ui {

struct asset {
    std::string_view name;         // file name under bridge/ui/, e.g. "app.js"
    std::string_view content_type;
    std::string_view etag;         // quoted strong validator (a digest of the content)
    std::string_view body;
};

// Every embedded file (generated).
std::span<const asset> assets() noexcept;
const asset* find_asset(std::string_view name) noexcept;

// The Content-Security-Policy every dashboard response carries: same-origin scripts, styles and
// fetches only; no inline script, no framing.
std::string_view content_security_policy() noexcept;

// 200 with the asset (or 304 when If-None-Match matches its ETag), 404 for an unknown name.
http_response serve(const http_request& req, std::string_view name);

} // namespace wopbridge::http::ui
