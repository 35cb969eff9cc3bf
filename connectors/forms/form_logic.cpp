#include "form_logic.hpp"

#include <wopbridge/http_util.hpp>
#include <wopbridge/json_bytes.hpp>
#include <wopbridge/json_reply.hpp>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace wopbridge::forms {
namespace {

bool all_hex(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return http::hex_digit(c) >= 0; });
}

} // namespace

std::optional<http::param_list> parse_urlencoded(std::string_view body) {
    return http::parse_form_urlencoded(body);
}

std::optional<std::string> normalize_origin(std::string_view url) {
    auto sep = url.find("://");
    if (sep == std::string_view::npos) {
        return std::nullopt;
    }
    std::string scheme = http::to_lower(url.substr(0, sep));
    if (scheme != "http" && scheme != "https") {
        return std::nullopt;
    }
    auto rest = url.substr(sep + 3);
    auto end = rest.find_first_of("/?#");
    auto authority = rest.substr(0, end);
    if (authority.empty() || authority.find('@') != std::string_view::npos) {
        return std::nullopt;
    }
    std::string host;
    std::string_view port;
    if (authority.front() == '[') { // IPv6 literal
        auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        host = http::to_lower(authority.substr(0, close + 1));
        auto tail = authority.substr(close + 1);
        if (!tail.empty()) {
            if (tail.front() != ':') {
                return std::nullopt;
            }
            port = tail.substr(1);
        }
    } else {
        auto colon = authority.rfind(':');
        host = http::to_lower(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port = authority.substr(colon + 1);
        }
    }
    if (host.empty()) {
        return std::nullopt;
    }
    if (!port.empty()) {
        unsigned value = 0;
        auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
            return std::nullopt;
        }
        if ((scheme == "http" && value == 80) || (scheme == "https" && value == 443)) {
            port = {};
        }
    }
    std::string out = scheme + "://" + host;
    if (!port.empty()) {
        out += ':';
        out += port;
    }
    return out;
}

namespace {

// A DNS name as browsers put it in Origin (ASCII, punycode for IDNs): dot-separated labels of
// letters, digits, '-' and '_', none empty, none longer than 63.
bool valid_host_name(std::string_view h) {
    if (h.empty() || h.size() > 253) {
        return false;
    }
    std::size_t label = 0;
    for (char c : h) {
        if (c == '.') {
            if (label == 0) {
                return false;
            }
            label = 0;
            continue;
        }
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
            return false;
        }
        if (++label > 63) {
            return false;
        }
    }
    return label > 0;
}

} // namespace

std::optional<std::string> parse_allowed_origin(std::string_view entry) {
    auto sep = entry.find("://");
    if (sep == std::string_view::npos) {
        return std::nullopt;
    }
    const std::string scheme = http::to_lower(entry.substr(0, sep));
    if (scheme != "http" && scheme != "https") {
        return std::nullopt;
    }
    auto authority = entry.substr(sep + 3);
    // The whole rest is the authority: a path, query, fragment or userinfo would make an entry
    // that no browser's Origin can ever equal.
    if (authority.empty() || authority.find_first_of("/?#@\\") != std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view host = authority;
    std::string_view port;
    if (authority.front() == '[') {
        auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        host = authority.substr(0, close + 1);
        auto tail = authority.substr(close + 1);
        if (!tail.empty()) {
            if (tail.front() != ':') {
                return std::nullopt;
            }
            port = tail.substr(1);
            if (port.empty()) {
                return std::nullopt;
            }
        }
        std::string literal(host.substr(1, host.size() - 2));
        unsigned char buf[16];
        if (inet_pton(AF_INET6, literal.c_str(), buf) != 1) {
            return std::nullopt;
        }
    } else {
        if (auto colon = authority.find(':'); colon != std::string_view::npos) {
            host = authority.substr(0, colon);
            port = authority.substr(colon + 1);
            if (port.empty()) {
                return std::nullopt;
            }
        }
        if (!valid_host_name(host)) {
            return std::nullopt;
        }
    }
    if (!port.empty() && !std::all_of(port.begin(), port.end(), [](char c) {
            return c >= '0' && c <= '9';
        })) {
        return std::nullopt;
    }
    return normalize_origin(entry); // checks the port's range, drops a default port
}

bool origin_allowed(std::optional<std::string_view> origin, std::optional<std::string_view> referer,
                    const std::vector<std::string>& allowed) {
    std::optional<std::string> candidate;
    if (origin && !origin->empty()) {
        candidate = normalize_origin(*origin); // "null" does not parse and so never matches
    } else if (referer && !referer->empty()) {
        candidate = normalize_origin(*referer);
    }
    if (!candidate) {
        return false;
    }
    for (const auto& entry : allowed) {
        auto norm = normalize_origin(entry);
        if (norm && *norm == *candidate) {
            return true;
        }
    }
    return false;
}

std::string issue_form_token(std::string_view secret, std::string_view subscription_id,
                             std::int64_t expiry_s, std::string_view nonce_hex) {
    std::string payload = std::to_string(expiry_s) + "." + std::string(nonce_hex);
    std::string signed_text = std::string(subscription_id) + "." + payload;
    return payload + "." + sig::to_hex(sig::hmac_sha256(secret, signed_text));
}

std::string_view to_string(token_verdict v) noexcept {
    switch (v) {
    case token_verdict::valid:
        return "valid";
    case token_verdict::missing:
        return "missing";
    case token_verdict::malformed:
        return "malformed";
    case token_verdict::mismatch:
        return "mismatch";
    case token_verdict::expired:
        return "expired";
    }
    return "unknown";
}

token_verdict verify_form_token(std::string_view secret, std::string_view subscription_id,
                                std::optional<std::string_view> token, std::int64_t now_s) {
    if (!token || token->empty()) {
        return token_verdict::missing;
    }
    auto t = *token;
    auto d1 = t.find('.');
    auto d2 = d1 == std::string_view::npos ? d1 : t.find('.', d1 + 1);
    if (d2 == std::string_view::npos || t.find('.', d2 + 1) != std::string_view::npos) {
        return token_verdict::malformed;
    }
    auto expiry_text = t.substr(0, d1);
    auto nonce = t.substr(d1 + 1, d2 - d1 - 1);
    auto mac = t.substr(d2 + 1);
    auto expiry = sig::parse_unix_seconds(expiry_text);
    if (!expiry || !all_hex(nonce) || nonce.size() > 64 || mac.size() != 64 || !all_hex(mac)) {
        return token_verdict::malformed;
    }
    auto expected = issue_form_token(secret, subscription_id, *expiry, nonce);
    if (!sig::constant_time_equal(expected, t)) {
        return token_verdict::mismatch;
    }
    if (now_s > *expiry) {
        return token_verdict::expired;
    }
    return token_verdict::valid;
}

std::string provider_event_id(std::string_view subscription_id, const http::param_list& fields,
                              const std::vector<stored_file>& files,
                              std::optional<std::string_view> submission_id_field,
                              std::int64_t received_at_ms, std::int64_t window_s) {
    if (submission_id_field && !submission_id_field->empty()) {
        if (auto v = field_value(fields, *submission_id_field); v && !v->empty()) {
            return "submission:" + *v;
        }
    }
    // Length-prefixed so ("ab","c") and ("a","bc") never hash alike.
    auto put = [](std::string& out, std::string_view s) {
        out += std::to_string(s.size());
        out += ':';
        out += s;
    };
    http::param_list sorted = fields;
    std::stable_sort(sorted.begin(), sorted.end());
    std::vector<std::string> file_hashes;
    for (const auto& f : files) {
        file_hashes.push_back(f.filename + "\n" + f.sha256_hex);
    }
    std::sort(file_hashes.begin(), file_hashes.end());
    std::string material;
    put(material, subscription_id);
    for (const auto& [k, v] : sorted) {
        put(material, k);
        put(material, v);
    }
    material += '|';
    for (const auto& h : file_hashes) {
        put(material, h);
    }
    std::int64_t window = window_s > 0 ? window_s : 10;
    std::int64_t received_s = received_at_ms >= 0 ? received_at_ms / 1000 : 0;
    put(material, std::to_string(received_s / window));
    return "hash:" + sig::to_hex(sig::sha256(material));
}

std::string form_content_json(const http::param_list& fields, const std::vector<stored_file>& files) {
    boost::json::object field_obj;
    for (const auto& [k, v] : fields) {
        auto it = field_obj.find(k);
        if (it == field_obj.end()) {
            field_obj.emplace(k, boost::json::string(v));
        } else if (it->value().is_array()) {
            it->value().as_array().emplace_back(boost::json::string(v));
        } else {
            boost::json::array arr;
            arr.emplace_back(std::move(it->value()));
            arr.emplace_back(boost::json::string(v));
            it->value() = std::move(arr);
        }
    }
    boost::json::array file_arr;
    for (const auto& f : files) {
        boost::json::object ref;
        ref["ref"] = f.ref;
        if (!f.filename.empty()) {
            // AttachmentRef is closed and its filename a string: a name that is not UTF-8 is
            // carried as "$base64:<its bytes>" (json_bytes.hpp), so no byte of it is lost.
            ref["filename"] = wopbridge::json::carried_text(f.filename);
        }
        if (!f.media_type.empty()) {
            ref["mediaType"] = wopbridge::json::lossy_utf8(f.media_type);
        }
        ref["bytes"] = f.bytes;
        file_arr.emplace_back(std::move(ref));
    }
    boost::json::value fields_value = std::move(field_obj);
    wopbridge::json::carry_invalid_utf8(fields_value); // a raw \xff or %FF is taken, not refused
    boost::json::object form;
    form["fields"] = std::move(fields_value);
    form["files"] = std::move(file_arr);
    boost::json::object root;
    root["form"] = std::move(form);
    return boost::json::serialize(root);
}

void remove_field(http::param_list& fields, std::string_view name) {
    fields.erase(std::remove_if(fields.begin(), fields.end(),
                                [&](const auto& p) { return p.first == name; }),
                 fields.end());
}

std::optional<std::string> field_value(const http::param_list& fields, std::string_view name) {
    for (const auto& [k, v] : fields) {
        if (k == name) {
            return v;
        }
    }
    return std::nullopt;
}

bool wants_json(std::optional<std::string_view> accept) {
    return accept && http::to_lower(*accept).find("application/json") != std::string::npos;
}

std::string error_envelope(std::string_view code, std::string_view message,
                           std::optional<int> retry_after_s) {
    return wopbridge::error_envelope(code, message, retry_after_s);
}

} // namespace wopbridge::forms
