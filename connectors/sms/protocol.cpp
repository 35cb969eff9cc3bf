#include "sms/protocol.hpp"

#include <wopbridge/http_util.hpp>
#include <wopbridge/json_bytes.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace wopbridge::sms {
namespace {

std::string string_field(const boost::json::value& body, std::string_view key) {
    if (const auto* o = body.if_object()) {
        if (const auto* v = o->if_contains(key); v != nullptr && v->is_string()) {
            return std::string(v->as_string().c_str(), v->as_string().size());
        }
    }
    return {};
}

} // namespace

std::string signed_url(const settings& s, std::string_view request_public_url,
                       std::string_view target) {
    if (s.public_url.empty()) {
        return std::string(request_public_url);
    }
    std::string url = s.public_url.substr(0, s.public_url.find('?'));
    if (const auto q = target.find('?'); q != std::string_view::npos) {
        url.append(target.substr(q));
    }
    return url;
}

std::optional<std::string> alternate_port_form(std::string_view url) {
    std::string_view default_port;
    std::size_t authority_start = 0;
    if (url.rfind("https://", 0) == 0) {
        default_port = ":443";
        authority_start = 8;
    } else if (url.rfind("http://", 0) == 0) {
        default_port = ":80";
        authority_start = 7;
    } else {
        return std::nullopt;
    }
    const auto authority_end = url.find_first_of("/?#", authority_start);
    std::string_view authority = url.substr(authority_start, authority_end - authority_start);
    std::string_view rest =
        authority_end == std::string_view::npos ? std::string_view{} : url.substr(authority_end);
    if (authority.empty() || authority.find('@') != std::string_view::npos) {
        return std::nullopt;
    }
    std::string out(url.substr(0, authority_start));
    const auto bracket = authority.rfind(']'); // IPv6 literal: a port only after the bracket
    const auto colon = authority.rfind(':');
    const bool has_port =
        colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
    if (has_port) {
        if (authority.substr(colon) != default_port) {
            return std::nullopt;
        }
        out.append(authority.substr(0, colon));
    } else {
        out.append(authority).append(default_port);
    }
    out.append(rest);
    return out;
}

std::optional<sms_request> read_signed_part(std::string_view content_type, std::string_view body,
                                            std::string& error, bool& too_many_fields) {
    too_many_fields = false;
    sms_request r;
    const std::string media = http::media_type(content_type);
    if (media == "application/json") {
        r.format = body_format::json; // signed as raw bytes (bodySHA256): nothing to parse yet
        return r;
    }
    if (media != "application/x-www-form-urlencoded" && !media.empty()) {
        error = "unsupported content type";
        return std::nullopt;
    }
    if (http::form_field_count(body) > max_form_fields) {
        too_many_fields = true;
        error = "a Twilio request carries at most " + std::to_string(max_form_fields) +
                " parameters";
        return std::nullopt;
    }
    auto fields = http::parse_form_urlencoded(body);
    if (!fields) {
        error = "form body has a broken %-escape";
        return std::nullopt;
    }
    r.params = std::move(*fields);
    return r;
}

bool complete_request(sms_request& r, std::string_view body, std::string& error) {
    if (r.format == body_format::json) {
        // Strings that are not UTF-8 are kept (content carries them as {"$base64":…}).
        boost::json::parse_options opts;
        opts.allow_invalid_utf8 = true;
        boost::system::error_code ec;
        r.body = boost::json::parse(body, ec, {}, opts);
        if (ec || !r.body.is_object()) {
            error = "body is not a JSON object";
            return false;
        }
        if (json::numbers_in(body, r.body) == json::number_fidelity::not_finite) {
            error = "a number in the body is beyond what a JSON number can carry (1e400)";
            return false;
        }
    } else {
        boost::json::object obj;
        for (const auto& [name, value] : r.params) {
            if (!obj.contains(name)) {
                obj[name] = value;
            }
        }
        r.body = std::move(obj);
    }
    std::string sid = string_field(r.body, "MessageSid");
    if (sid.empty()) {
        sid = string_field(r.body, "SmsSid");
    }
    const std::string status = string_field(r.body, "MessageStatus");
    r.status_callback = !status.empty() && status != "received";
    if (sid.empty()) {
        // No provider id: a content hash still dedupes a provider retry of the same bytes.
        r.provider_event_id = "sha256:" + sig::to_hex(sig::sha256(body));
    } else if (r.status_callback) {
        r.provider_event_id = "status:" + sid + ":" + status;
    } else {
        r.provider_event_id = "sms:" + sid;
    }
    return true;
}

std::optional<sms_request> parse_request(std::string_view content_type, std::string_view body,
                                         std::string& error) {
    bool too_many = false;
    auto r = read_signed_part(content_type, body, error, too_many);
    if (!r || !complete_request(*r, body, error)) {
        return std::nullopt;
    }
    return r;
}

sig::verdict verify_request(const settings& s, const sms_request& r, std::string_view url,
                            std::string_view body, std::string_view signature) {
    auto check = [&](std::string_view candidate) {
        return r.format == body_format::json
                   ? sig::verify_twilio_json(s.auth_tokens, candidate, body, signature)
                   : sig::verify_twilio(s.auth_tokens, candidate, r.params, signature);
    };
    const sig::verdict first = check(url);
    if (first != sig::verdict::mismatch) {
        return first;
    }
    if (auto alternate = alternate_port_form(url)) {
        if (check(*alternate) == sig::verdict::valid) {
            return sig::verdict::valid;
        }
    }
    return first;
}

std::string xml_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&apos;";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
                break;
            }
            out.push_back(c);
        }
    }
    return out;
}

std::string twiml_response(const std::optional<std::string>& message) {
    std::string out = R"(<?xml version="1.0" encoding="UTF-8"?>)";
    if (!message) {
        return out + "<Response/>";
    }
    return out + "<Response><Message>" + xml_escape(*message) + "</Message></Response>";
}

std::string content_json(const sms_request& r, std::string_view content_type) {
    boost::json::object headers;
    if (!content_type.empty()) {
        headers["content-type"] = json::lossy_utf8(content_type);
    }
    return json::posted_webhook_content(std::move(headers), r.body);
}

} // namespace wopbridge::sms
