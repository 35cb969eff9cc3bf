// The forms connector module: HTML form posts (urlencoded and multipart) on POST /v1/ingest/{id},
// signed form tokens on GET /v1/ingest/{id}/token. Built on the SDK's C++ wrapper (connector.hpp),
// which owns the C ABI trampolines and catches everything at the boundary.

#include "forms/form_logic.hpp"

#include <wopbridge/connector.hpp>
#include <wopbridge/http_util.hpp>
#include <wopbridge/json_config.hpp>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace wopbridge::forms {
namespace {

constexpr const char* config_schema = R"({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "maxBodyBytes": {"type": "integer", "minimum": 1024, "default": 26214400},
    "maxParts": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100},
    "maxFileBytes": {"type": "integer", "minimum": 1, "default": 10485760}
  }
})";

constexpr const char* subscription_schema = R"({
  "type": "object",
  "additionalProperties": false,
  "required": ["allowedOrigins"],
  "properties": {
    "allowedOrigins": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    "honeypotField": {"type": "string", "minLength": 1},
    "tokenSecret": {"type": "string", "minLength": 16, "writeOnly": true},
    "tokenTtl": {"type": "integer", "minimum": 30, "maximum": 604800, "default": 3600},
    "tokenField": {"type": "string", "minLength": 1, "default": "_token"},
    "submissionIdField": {"type": "string", "minLength": 1},
    "dedupWindow": {"type": "integer", "minimum": 1, "maximum": 86400, "default": 10},
    "successUrl": {"type": "string"},
    "errorUrl": {"type": "string"}
  }
})";

struct connector_config {
    std::size_t max_body_bytes = 25 * 1024 * 1024;
    http::multipart_limits limits;
};

struct subscription_settings {
    std::string id;
    std::vector<std::string> allowed_origins;
    std::string honeypot_field;
    std::string token_secret;
    std::int64_t token_ttl_s = 3600;
    std::string token_field = "_token";
    std::string submission_id_field;
    std::int64_t dedup_window_s = 10;
    std::string success_url;
    std::string error_url;
};

using json_config::config_error;
using json_config::get_int;
using json_config::get_string;

// An entry as it may appear in an error: printable ASCII only, and bounded.
std::string quoted_entry(std::string_view text) {
    std::string out;
    for (char c : text.substr(0, 80)) {
        out += (c >= 0x20 && c < 0x7F) ? c : '?';
    }
    return text.size() > 80 ? out + "..." : out;
}

connector_config parse_config(std::string_view json) {
    const auto o = json_config::parse_object(json, "config");
    json_config::check_keys(o, {"maxBodyBytes", "maxParts", "maxFileBytes"}, "config");
    connector_config c;
    c.max_body_bytes = static_cast<std::size_t>(
        get_int(o, "maxBodyBytes", 25 * 1024 * 1024, 1024, std::int64_t{1} << 34));
    c.limits.max_parts = static_cast<std::size_t>(get_int(o, "maxParts", 100, 1, 10000));
    c.limits.max_part_bytes = static_cast<std::size_t>(
        get_int(o, "maxFileBytes", 10 * 1024 * 1024, 1, std::int64_t{1} << 34));
    c.limits.max_total_bytes = c.max_body_bytes;
    return c;
}

bool absolute_http_url(std::string_view url) {
    return normalize_origin(url).has_value();
}

subscription_settings parse_settings(std::string_view id, std::string_view json) {
    const auto o = json_config::parse_object(json, "settings");
    static const std::vector<std::string_view> known{
        "allowedOrigins",    "honeypotField", "tokenSecret", "tokenTtl", "tokenField",
        "submissionIdField", "dedupWindow",   "successUrl",  "errorUrl"};
    for (const auto& kv : o) {
        if (std::find(known.begin(), known.end(), kv.key()) == known.end()) {
            throw config_error("unknown setting " + std::string(kv.key()));
        }
    }
    subscription_settings s;
    s.id = std::string(id);
    auto origins = o.find("allowedOrigins");
    if (origins == o.end() || !origins->value().is_array() || origins->value().as_array().empty()) {
        throw config_error("allowedOrigins must be a non-empty array of origins");
    }
    const auto& entries = origins->value().as_array();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string at = "allowedOrigins[" + std::to_string(i) + "]";
        if (!entries[i].is_string()) {
            throw config_error(at + " must be a string");
        }
        // Anything else (javascript:…, a path, userinfo, a wildcard) could never equal a browser's
        // Origin, so it would silently allow nothing: refuse it, quoting the operator's entry.
        auto norm = parse_allowed_origin(entries[i].as_string());
        if (!norm) {
            throw config_error(at + " '" + quoted_entry(entries[i].as_string()) +
                               "' is not an origin (expected http(s)://host[:port], without a "
                               "path or userinfo)");
        }
        s.allowed_origins.emplace_back(*norm);
    }
    s.honeypot_field = get_string(o, "honeypotField");
    s.token_secret = get_string(o, "tokenSecret");
    if (!s.token_secret.empty() && s.token_secret.size() < 16) {
        throw config_error("tokenSecret must be at least 16 characters");
    }
    s.token_ttl_s = get_int(o, "tokenTtl", 3600, 30, 604800);
    s.token_field = get_string(o, "tokenField", "_token");
    s.submission_id_field = get_string(o, "submissionIdField");
    s.dedup_window_s = get_int(o, "dedupWindow", 10, 1, 86400);
    s.success_url = get_string(o, "successUrl");
    s.error_url = get_string(o, "errorUrl");
    if (!s.success_url.empty() && !absolute_http_url(s.success_url)) {
        throw config_error("successUrl must be an absolute http(s) URL");
    }
    if (!s.error_url.empty() && !absolute_http_url(s.error_url)) {
        throw config_error("errorUrl must be an absolute http(s) URL");
    }
    return s;
}

using header_pairs = std::vector<std::pair<std::string, std::string>>;

struct reply {
    int status = 200;
    header_pairs headers;
    std::string body;
};

// What a request needs to be answered, possibly later (after an asynchronous submit).
struct request_shape {
    request_handle req;
    bool json = false;
    std::string cors_origin; // echoed when the request's Origin is allowed
    std::shared_ptr<const subscription_settings> settings;
};

class forms_connector final : public connector {
  public:
    static connector_info info() {
        return connector_info{
            .name = "forms",
            .version = "1.0.0",
            .status = "alpha",
            .security_posture = "Checks Origin/Referer against an allow-list, optional HMAC form "
                                "tokens and a honeypot; "
                                "browsers are not authenticated, so treat all fields as untrusted.",
            .source = "form",
            .config_schema_json = config_schema,
            .subscription_schema_json = subscription_schema,
            .capabilities = WB_CAP_HTTP_INGEST | WB_CAP_TOKEN_GET};
    }

    static status validate(std::string_view config, std::string& error) {
        return json_config::status_of_reading(error, [&] { parse_config(config); });
    }

    forms_connector(host& h, std::string_view config) : host_(h), cfg_(parse_config(config)) {
        if (!WOPBRIDGE_API_HAS(h.api(), store_attachment)) {
            throw std::runtime_error("host API too old: store_attachment missing");
        }
    }

    ~forms_connector() override {
        // Submit callbacks reference this object: the host always completes them, so wait.
        std::unique_lock lock(mu_);
        idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
    }

    status subscribe(const subscription_info& sub, std::string& error) override {
        return json_config::status_of_reading(error, [&] {
            auto s = std::make_shared<const subscription_settings>(
                parse_settings(sub.id, sub.settings_json));
            std::lock_guard lock(mu_);
            subs_[std::string(sub.id)] = std::move(s);
        });
    }

    status unsubscribe(std::string_view id) override {
        std::lock_guard lock(mu_);
        subs_.erase(std::string(id));
        return status::ok;
    }

    status stop(std::int64_t deadline_ms) override {
        std::unique_lock lock(mu_);
        auto now = host_.now_ms();
        auto wait_ms = deadline_ms > now ? deadline_ms - now : 0;
        return idle_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                                 [&] { return in_flight_ == 0; })
                   ? status::ok
                   : status::busy;
    }

    void on_http_request(request_handle req, const http_request_view& r) override {
        std::shared_ptr<const subscription_settings> s;
        {
            std::lock_guard lock(mu_);
            auto it = subs_.find(std::string(r.subscription_id));
            if (it != subs_.end()) {
                s = it->second;
            }
        }
        auto shape = std::make_shared<request_shape>();
        shape->req = std::move(req);
        shape->json = wants_json(r.header("accept"));
        shape->settings = s;
        if (!s) {
            finish_error(*shape, 404, "not_found", "no such form subscription");
            return;
        }
        auto origin = r.header("origin");
        if (origin && origin_allowed(origin, std::nullopt, s->allowed_origins)) {
            shape->cors_origin = *normalize_origin(*origin);
        }
        auto path = http::path_of(r.target);
        if (r.method == "GET" && path.size() >= 6 && path.substr(path.size() - 6) == "/token") {
            issue_token(*shape, *s);
            return;
        }
        if (r.method == "OPTIONS") {
            // CORS preflight for fetch() posts with Accept: application/json.
            reply rep{204, {}, {}};
            add_cors(rep, *shape);
            rep.headers.emplace_back("access-control-allow-methods", "POST, GET");
            rep.headers.emplace_back("access-control-allow-headers", "content-type, accept");
            send(*shape, rep);
            return;
        }
        if (r.method != "POST") {
            finish_error(*shape, 405, "method_not_allowed", "forms accept POST");
            return;
        }
        handle_post(shape, r, *s);
    }

  private:
    static void send(request_shape& shape, const reply& rep) {
        shape.req.respond(rep.status, rep.headers, rep.body);
    }

    static void add_cors(reply& rep, const request_shape& shape) {
        if (!shape.cors_origin.empty()) {
            rep.headers.emplace_back("access-control-allow-origin", shape.cors_origin);
            rep.headers.emplace_back("vary", "Origin");
        }
    }

    static std::string with_query(const std::string& url, std::string_view key,
                                  std::string_view value) {
        std::string out = url;
        auto hash = out.find('#');
        std::string frag;
        if (hash != std::string::npos) {
            frag = out.substr(hash);
            out.resize(hash);
        }
        out += out.find('?') == std::string::npos ? '?' : '&';
        out += key;
        out += '=';
        out += value;
        return out + frag;
    }

    static void finish_error(request_shape& shape, int status_code, std::string_view code,
                             std::string_view message,
                             std::optional<int> retry_after = std::nullopt) {
        reply rep;
        if (!shape.json && shape.settings && !shape.settings->error_url.empty()) {
            rep.status = 303;
            rep.headers.emplace_back("location",
                                     with_query(shape.settings->error_url, "error", code));
        } else {
            rep.status = status_code;
            rep.headers.emplace_back("content-type", "application/json");
            rep.body = error_envelope(code, message, retry_after);
        }
        if (retry_after) {
            rep.headers.emplace_back("retry-after", std::to_string(*retry_after));
        }
        rep.headers.emplace_back("cache-control", "no-store");
        add_cors(rep, shape);
        send(shape, rep);
    }

    static void finish_success(request_shape& shape, std::string_view outcome,
                               std::string_view run_id) {
        reply rep;
        const auto& s = *shape.settings;
        if (!shape.json && !s.success_url.empty()) {
            rep.status = 303;
            rep.headers.emplace_back("location", s.success_url);
        } else if (!shape.json) {
            rep.status = 200;
            rep.headers.emplace_back("content-type", "text/html; charset=utf-8");
            rep.body = "<!doctype html><meta charset=\"utf-8\"><title>Thank you</title>"
                       "<p>Thank you, your submission was received.</p>\n";
        } else {
            rep.status = outcome == "duplicate" ? 200 : 202;
            rep.headers.emplace_back("content-type", "application/json");
            boost::json::object o{{"outcome", outcome}};
            if (!run_id.empty()) {
                o["runId"] = run_id;
            }
            rep.body = boost::json::serialize(o);
        }
        rep.headers.emplace_back("cache-control", "no-store");
        add_cors(rep, shape);
        send(shape, rep);
    }

    std::int64_t now_s() const { return host_.now_ms() / 1000; }

    void issue_token(request_shape& shape, const subscription_settings& s) {
        if (s.token_secret.empty()) {
            finish_error(shape, 404, "not_found", "this form does not use tokens");
            return;
        }
        std::uint8_t nonce[16];
        if (host_.random_bytes(nonce, sizeof nonce) != status::ok) {
            finish_error(shape, 503, "unavailable", "no randomness available", 1);
            return;
        }
        auto nonce_hex =
            sig::to_hex(std::string_view(reinterpret_cast<const char*>(nonce), sizeof nonce));
        auto expiry = now_s() + s.token_ttl_s;
        boost::json::object o{{"token", issue_form_token(s.token_secret, s.id, expiry, nonce_hex)},
                              {"field", s.token_field},
                              {"expiresAt", expiry}};
        reply rep{200,
                  {{"content-type", "application/json"}, {"cache-control", "no-store"}},
                  boost::json::serialize(o)};
        add_cors(rep, shape);
        send(shape, rep);
    }

    // Answers 403 (and says so) unless the form token is valid.
    bool token_accepted(request_shape& shape, const subscription_settings& s,
                        const std::optional<std::string>& token) {
        auto verdict = verify_form_token(
            s.token_secret, s.id, token ? std::optional<std::string_view>(*token) : std::nullopt,
            now_s());
        if (verdict == token_verdict::valid) {
            return true;
        }
        host_.log(log_level::info, std::string(R"({"event":"form.refused","reason":"token_)") +
                                       std::string(to_string(verdict)) + "\"}");
        finish_error(shape, 403, "forbidden", "form token missing, invalid or expired");
        return false;
    }

    void handle_post(const std::shared_ptr<request_shape>& shape, const http_request_view& r,
                     const subscription_settings& s) {
        auto body = r.body;
        if (body.size() > cfg_.max_body_bytes) {
            finish_error(*shape, 413, "payload_too_large", "the form body is too large");
            return;
        }
        auto ct_text = r.header("content-type").value_or("");
        auto ct = http::parse_header_value(ct_text);
        http::param_list fields;
        std::vector<http::multipart_part> file_parts;
        std::vector<http::form_part_info> file_infos;
        // What a header or a scan can refuse is refused before the form is parsed: a forged post
        // costs no more than reading it.
        if (!origin_allowed(r.header("origin"), r.header("referer"), s.allowed_origins)) {
            host_.log(log_level::info, R"({"event":"form.refused","reason":"origin_not_allowed"})");
            finish_error(*shape, 403, "forbidden", "origin not allowed");
            return;
        }
        if (ct.value == "application/x-www-form-urlencoded") {
            if (http::form_field_count(body) > cfg_.limits.max_parts) {
                finish_error(*shape, 413, "payload_too_large",
                             "the form has more fields than maxParts allows");
                return;
            }
            if (!s.token_secret.empty() &&
                !token_accepted(*shape, s, http::find_form_field(body, s.token_field))) {
                return;
            }
            auto parsed = parse_urlencoded(body);
            if (!parsed) {
                finish_error(*shape, 400, "validation_error", "malformed urlencoded body");
                return;
            }
            fields = std::move(*parsed);
        } else if (ct.value == "multipart/form-data") {
            auto boundary = http::boundary_of(ct_text);
            if (!boundary) {
                finish_error(*shape, 400, "validation_error", "multipart body without a boundary");
                return;
            }
            auto parsed = http::parse_multipart(body, *boundary, cfg_.limits);
            if (parsed.error != http::multipart_error::none) {
                bool size = parsed.error == http::multipart_error::part_too_large ||
                            parsed.error == http::multipart_error::too_large ||
                            parsed.error == http::multipart_error::too_many_parts;
                finish_error(
                    *shape, size ? 413 : 400, size ? "payload_too_large" : "validation_error",
                    std::string("multipart body refused: ") + std::string(to_string(parsed.error)));
                return;
            }
            for (auto& part : parsed.parts) {
                auto info = http::form_part_info_of(part);
                if (!info) {
                    finish_error(*shape, 400, "validation_error",
                                 "multipart part without form-data name");
                    return;
                }
                if (info->filename) {
                    // Browsers send an empty, nameless file part for an untouched file input.
                    if (info->filename->empty() && part.body.empty()) {
                        continue;
                    }
                    file_infos.push_back(std::move(*info));
                    file_parts.push_back(std::move(part));
                } else {
                    fields.emplace_back(info->name, std::move(part.body));
                }
            }
        } else {
            finish_error(*shape, 415, "unsupported_media_type",
                         "forms accept application/x-www-form-urlencoded or multipart/form-data");
            return;
        }

        if (!s.token_secret.empty()) {
            // A multipart token was not checked above: finding it means parsing the parts
            // (bounded by the multipart limits).
            if (ct.value == "multipart/form-data" &&
                !token_accepted(*shape, s, field_value(fields, s.token_field))) {
                return;
            }
            remove_field(fields, s.token_field);
        }
        if (!s.honeypot_field.empty()) {
            auto trap = field_value(fields, s.honeypot_field);
            if (trap && !trap->empty()) {
                // Answer like a success so the bot learns nothing; submit nothing.
                host_.log(log_level::info, R"({"event":"form.refused","reason":"honeypot"})");
                finish_success(*shape, "accepted", "");
                return;
            }
            remove_field(fields, s.honeypot_field);
        }

        std::vector<stored_file> files;
        for (std::size_t i = 0; i < file_parts.size(); ++i) {
            char ref[128] = {};
            const auto& bytes = file_parts[i].body;
            if (host_.api()->store_attachment(host_.handle(), wb_str{bytes.data(), bytes.size()},
                                              ref, sizeof ref) != WB_OK) {
                finish_error(*shape, 503, "store_unavailable", "could not store the upload", 5);
                return;
            }
            stored_file f;
            f.ref = ref;
            f.filename = file_infos[i].filename.value_or("");
            f.media_type = file_infos[i].media_type.empty() ? "application/octet-stream"
                                                            : file_infos[i].media_type;
            f.bytes = bytes.size();
            f.sha256_hex = sig::to_hex(sig::sha256(bytes));
            files.push_back(std::move(f));
        }

        inbound_event ev;
        ev.subscription_id = s.id;
        ev.received_at_ms = r.received_at_ms > 0 ? r.received_at_ms : host_.now_ms();
        ev.provider_event_id = provider_event_id(
            s.id, fields, files,
            s.submission_id_field.empty() ? std::nullopt
                                          : std::optional<std::string_view>(s.submission_id_field),
            ev.received_at_ms, s.dedup_window_s);
        ev.verified = true; // origin (and the token when configured) checked
        ev.content_json = form_content_json(fields, files);

        {
            std::lock_guard lock(mu_);
            ++in_flight_;
        }
        auto st = host_.submit(ev, [this, shape](const submit_outcome& out) {
            on_submitted(*shape, out);
            release();
        });
        if (st != status::ok) {
            release();
            if (st == status::invalid) {
                // The host refused the content itself: a resubmission would be refused again.
                finish_error(*shape, 400, "validation_error",
                             "the bridge refused the submission content as malformed");
                return;
            }
            finish_error(*shape, 503, "overloaded", "the bridge cannot take the submission now", 5);
        }
    }

    void release() {
        std::lock_guard lock(mu_);
        --in_flight_;
        idle_cv_.notify_all();
    }

    static void on_submitted(request_shape& shape, const submit_outcome& out) {
        switch (out.kind) {
        case outcome_kind::accepted:
        case outcome_kind::held:
            finish_success(shape, "accepted", out.run_id);
            return;
        case outcome_kind::duplicate:
            finish_success(shape, "duplicate", out.run_id);
            return;
        case outcome_kind::refused:
            break;
        }
        static constexpr refusal_wording wording{
            .not_active = "the form subscription is not active",
            .not_found = "no such form subscription",
            .invalid = "the submission was refused as invalid",
            .invalid_code = "validation_error",
            .unavailable = "the bridge cannot take the submission now",
            .default_retry_after_seconds = 5};
        const auto refusal = refusal_reply(out, wording);
        finish_error(shape, refusal.status, refusal.code, refusal.message,
                     refusal.retry_after_seconds > 0
                         ? std::optional<int>(refusal.retry_after_seconds)
                         : std::nullopt);
    }

    host& host_;
    connector_config cfg_;
    std::mutex mu_;
    std::condition_variable idle_cv_;
    std::size_t in_flight_ = 0;
    std::map<std::string, std::shared_ptr<const subscription_settings>> subs_;
};

} // namespace
} // namespace wopbridge::forms

WOPBRIDGE_CONNECTOR(wopbridge::forms::forms_connector)
