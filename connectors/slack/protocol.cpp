#include "slack/protocol.hpp"

#include <wopbridge/http_util.hpp>
#include <wopbridge/json_bytes.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

namespace wopbridge::slack {
namespace {

std::string string_at(const boost::json::object& o, std::string_view key) {
    if (const auto* v = o.if_contains(key); v != nullptr && v->is_string()) {
        return std::string(v->as_string().c_str(), v->as_string().size());
    }
    return {};
}

const boost::json::object* object_at(const boost::json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v == nullptr ? nullptr : v->if_object();
}

// A channel id given as a string or as an object with an id.
std::string channel_of(const boost::json::object& o, std::string_view key) {
    if (const auto* v = o.if_contains(key)) {
        if (v->is_string()) {
            return std::string(v->as_string().c_str(), v->as_string().size());
        }
        if (v->is_object()) {
            return string_at(v->as_object(), "id");
        }
    }
    return {};
}

std::string body_hash(std::string_view body) {
    return "sha256:" + sig::to_hex(sig::sha256(body));
}

// Slack's JSON, read leniently where Slack is: strings that are not UTF-8 are kept (content
// carries them as {"$base64":…}, json_bytes.hpp), not refused.
boost::json::value parse_slack_json(std::string_view text, boost::system::error_code& ec) {
    boost::json::parse_options opts;
    opts.allow_invalid_utf8 = true;
    return boost::json::parse(text, ec, {}, opts);
}

std::optional<slack_request> parse_json(std::string_view body, std::string& error) {
    boost::system::error_code ec;
    auto doc = parse_slack_json(body, ec);
    if (ec || !doc.is_object()) {
        error = "body is not a JSON object";
        return std::nullopt;
    }
    if (json::numbers_in(body, doc) == json::number_fidelity::not_finite) {
        // Not carried raw as a generic webhook's would be: Slack's body has its token removed.
        error = "a number in the body is beyond what a JSON number can carry (1e400)";
        return std::nullopt;
    }
    auto& root = doc.as_object();
    const std::string type = string_at(root, "type");
    slack_request r;
    if (type == "url_verification") {
        const auto* challenge = root.if_contains("challenge");
        if (challenge == nullptr || !challenge->is_string()) {
            error = "url_verification without a challenge string";
            return std::nullopt;
        }
        r.kind = request_kind::url_verification;
        r.challenge = std::string(challenge->as_string().c_str(), challenge->as_string().size());
        return r;
    }
    if (type != "event_callback") {
        // app_rate_limited and future envelope types: acknowledged so Slack does not retry them.
        r.kind = request_kind::ignored;
        r.ignored_reason = type.empty() ? "JSON body without a type" : "envelope type " + type;
        return r;
    }
    const std::string event_id = string_at(root, "event_id");
    const auto* event = object_at(root, "event");
    if (event_id.empty() || event == nullptr) {
        error = "event_callback without event_id or event";
        return std::nullopt;
    }
    r.kind = request_kind::event;
    // Keyed on event_id only: retries (X-Slack-Retry-Num) carry the same id and dedupe.
    r.provider_event_id = "event:" + event_id;
    r.type = string_at(*event, "type");
    r.channel = channel_of(*event, "channel");
    if (r.channel.empty()) {
        if (const auto* item = object_at(*event, "item")) {
            r.channel = channel_of(*item, "channel");
        }
    }
    root.erase("token");
    r.body = std::move(doc);
    return r;
}

std::optional<slack_request> parse_interaction(std::string_view payload_text,
                                               std::string_view raw_body, std::string& error) {
    boost::system::error_code ec;
    auto doc = parse_slack_json(payload_text, ec);
    if (ec || !doc.is_object() ||
        json::numbers_in(payload_text, doc) == json::number_fidelity::not_finite) {
        error = "interactivity payload is not a JSON object";
        return std::nullopt;
    }
    auto& payload = doc.as_object();
    slack_request r;
    r.kind = request_kind::interaction;
    r.type = string_at(payload, "type");
    if (r.type.empty()) {
        error = "interactivity payload without a type";
        return std::nullopt;
    }
    // trigger_id is minted once per user interaction; Slack does not resend interactions, and a
    // proxy replaying the same bytes gets the same id. Payloads without one fall back to a hash.
    const std::string trigger_id = string_at(payload, "trigger_id");
    r.provider_event_id = "interaction:" + (trigger_id.empty() ? body_hash(raw_body) : trigger_id);
    r.channel = channel_of(payload, "channel");
    if (r.channel.empty()) {
        if (const auto* container = object_at(payload, "container")) {
            r.channel = string_at(*container, "channel_id");
        }
    }
    payload.erase("token");
    r.body = std::move(doc);
    return r;
}

std::optional<slack_request> parse_form_body(std::string_view body, std::string& error) {
    auto fields = http::parse_form_urlencoded(body);
    if (!fields) {
        error = "form body has a broken %-escape";
        return std::nullopt;
    }
    if (auto payload = http::find_param(*fields, "payload")) {
        return parse_interaction(*payload, body, error);
    }
    if (auto ssl = http::find_param(*fields, "ssl_check"); ssl && *ssl == "1") {
        slack_request r;
        r.kind = request_kind::ignored;
        r.ignored_reason = "ssl_check";
        return r;
    }
    auto command = http::find_param(*fields, "command");
    if (!command || command->empty()) {
        error = "form body is neither an interactivity payload nor a slash command";
        return std::nullopt;
    }
    slack_request r;
    r.kind = request_kind::slash_command;
    r.type = "slash_command";
    r.command = std::string(*command);
    boost::json::object obj;
    for (const auto& [name, value] : *fields) {
        if (name != "token") {
            obj[name] = value;
        }
    }
    const auto trigger_id = http::find_param(*fields, "trigger_id");
    r.provider_event_id =
        "command:" +
        (trigger_id && !trigger_id->empty() ? std::string(*trigger_id) : body_hash(body));
    if (auto channel = http::find_param(*fields, "channel_id")) {
        r.channel = std::string(*channel);
    }
    r.body = std::move(obj);
    return r;
}

bool contains(const std::vector<std::string>& list, std::string_view value) {
    return std::find(list.begin(), list.end(), value) != list.end();
}

} // namespace

sig::verdict verify_request(const settings& s, std::string_view timestamp,
                            std::string_view signature, std::string_view body, std::int64_t now_s) {
    return sig::verify_slack_v0(s.signing_secrets, timestamp, signature, body, now_s,
                                s.tolerance_seconds);
}

std::optional<slack_request> parse_request(std::string_view content_type, std::string_view body,
                                           std::string& error) {
    const std::string media = http::media_type(content_type);
    if (media == "application/json") {
        return parse_json(body, error);
    }
    if (media == "application/x-www-form-urlencoded") {
        return parse_form_body(body, error);
    }
    if (media.empty()) {
        const auto first = body.find_first_not_of(" \t\r\n");
        if (first != std::string_view::npos && body[first] == '{') {
            return parse_json(body, error);
        }
        return parse_form_body(body, error);
    }
    error = "unsupported content type";
    return std::nullopt;
}

bool passes_filters(const settings& s, const slack_request& r) {
    if (s.event_types) {
        const bool by_type = !r.type.empty() && contains(*s.event_types, r.type);
        const bool by_command = !r.command.empty() && contains(*s.event_types, r.command);
        if (!by_type && !by_command) {
            return false;
        }
    }
    if (s.channels) {
        if (r.channel.empty() || !contains(*s.channels, r.channel)) {
            return false;
        }
    }
    return true;
}

std::string content_json(const slack_request& r,
                         const std::vector<std::pair<std::string, std::string>>& headers) {
    boost::json::object hdrs;
    for (const auto& [name, value] : headers) {
        if (std::find(std::begin(forwarded_headers), std::end(forwarded_headers), name) !=
                std::end(forwarded_headers) &&
            !hdrs.contains(name)) {
            hdrs[name] = json::lossy_utf8(value);
        }
    }
    return json::posted_webhook_content(std::move(hdrs), r.body);
}

} // namespace wopbridge::slack
