// The forms connector module: HTML form posts (urlencoded and multipart) on POST /v1/ingest/{id},
// signed form tokens on GET /v1/ingest/{id}/token. Written against the C ABI (connector.h) with a
// thin trampoline layer at the bottom; every entry point catches everything at the edge.

#include "forms/form_logic.hpp"
#include "forms/multipart.hpp"

#include <wopbridge/connector.h>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
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
    multipart_limits limits;
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

struct config_error {
    std::string message;
};

const boost::json::object& as_object(const boost::json::value& v, std::string_view what) {
    if (!v.is_object()) {
        throw config_error{std::string(what) + " must be a JSON object"};
    }
    return v.as_object();
}

boost::json::value parse_json(std::string_view text, std::string_view what) {
    boost::system::error_code ec;
    auto v = boost::json::parse(text.empty() ? std::string_view("{}") : text, ec);
    if (ec) {
        throw config_error{std::string(what) + " is not valid JSON"};
    }
    return v;
}

std::int64_t get_int(const boost::json::object& o, std::string_view key, std::int64_t def,
                     std::int64_t min, std::int64_t max) {
    auto it = o.find(key);
    if (it == o.end()) {
        return def;
    }
    if (!it->value().is_int64() && !it->value().is_uint64()) {
        throw config_error{std::string(key) + " must be an integer"};
    }
    auto v = it->value().is_int64() ? it->value().as_int64()
                                    : static_cast<std::int64_t>(it->value().as_uint64());
    if (v < min || v > max) {
        throw config_error{std::string(key) + " is out of range"};
    }
    return v;
}

std::string get_string(const boost::json::object& o, std::string_view key, std::string def = {}) {
    auto it = o.find(key);
    if (it == o.end()) {
        return def;
    }
    if (!it->value().is_string() || it->value().as_string().empty()) {
        throw config_error{std::string(key) + " must be a non-empty string"};
    }
    return std::string(it->value().as_string());
}

connector_config parse_config(std::string_view json) {
    auto v = parse_json(json, "config");
    const auto& o = as_object(v, "config");
    static const std::vector<std::string_view> known{"maxBodyBytes", "maxParts", "maxFileBytes"};
    for (const auto& kv : o) {
        if (std::find(known.begin(), known.end(), kv.key()) == known.end()) {
            throw config_error{"unknown config key " + std::string(kv.key())};
        }
    }
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
    auto v = parse_json(json, "settings");
    const auto& o = as_object(v, "settings");
    static const std::vector<std::string_view> known{
        "allowedOrigins", "honeypotField", "tokenSecret", "tokenTtl",  "tokenField",
        "submissionIdField", "dedupWindow", "successUrl", "errorUrl"};
    for (const auto& kv : o) {
        if (std::find(known.begin(), known.end(), kv.key()) == known.end()) {
            throw config_error{"unknown setting " + std::string(kv.key())};
        }
    }
    subscription_settings s;
    s.id = std::string(id);
    auto origins = o.find("allowedOrigins");
    if (origins == o.end() || !origins->value().is_array() || origins->value().as_array().empty()) {
        throw config_error{"allowedOrigins must be a non-empty array of origins"};
    }
    for (const auto& e : origins->value().as_array()) {
        if (!e.is_string()) {
            throw config_error{"allowedOrigins entries must be strings"};
        }
        auto norm = normalize_origin(e.as_string());
        if (!norm || *norm != normalize_origin(*norm)) {
            throw config_error{"allowedOrigins entry is not scheme://host[:port]"};
        }
        // An entry with a path would silently never match: refuse it.
        std::string_view text = e.as_string();
        auto after_scheme = text.find("://");
        if (text.find('/', after_scheme + 3) != std::string_view::npos) {
            throw config_error{"allowedOrigins entry must not carry a path"};
        }
        s.allowed_origins.emplace_back(*norm);
    }
    s.honeypot_field = get_string(o, "honeypotField");
    s.token_secret = get_string(o, "tokenSecret");
    if (!s.token_secret.empty() && s.token_secret.size() < 16) {
        throw config_error{"tokenSecret must be at least 16 characters"};
    }
    s.token_ttl_s = get_int(o, "tokenTtl", 3600, 30, 604800);
    s.token_field = get_string(o, "tokenField", "_token");
    s.submission_id_field = get_string(o, "submissionIdField");
    s.dedup_window_s = get_int(o, "dedupWindow", 10, 1, 86400);
    s.success_url = get_string(o, "successUrl");
    s.error_url = get_string(o, "errorUrl");
    if (!s.success_url.empty() && !absolute_http_url(s.success_url)) {
        throw config_error{"successUrl must be an absolute http(s) URL"};
    }
    if (!s.error_url.empty() && !absolute_http_url(s.error_url)) {
        throw config_error{"errorUrl must be an absolute http(s) URL"};
    }
    return s;
}

void copy_error(char* buf, std::size_t size, std::string_view text) {
    if (buf == nullptr || size == 0) {
        return;
    }
    auto n = std::min(size - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
}

std::string_view view(wb_str s) {
    return s.size == 0 ? std::string_view{} : std::string_view(s.data, s.size);
}

wb_str str(std::string_view s) {
    return wb_str{s.data(), s.size()};
}

std::optional<std::string_view> find_header(const wb_http_request& r, std::string_view name) {
    for (std::size_t i = 0; i < r.header_count; ++i) {
        if (view(r.headers[i].name) == name) {
            return view(r.headers[i].value);
        }
    }
    return std::nullopt;
}

using header_pairs = std::vector<std::pair<std::string, std::string>>;

struct reply {
    int status = 200;
    header_pairs headers;
    std::string body;
};

// What a request needs to be answered after an asynchronous submit.
struct request_shape {
    wb_request_ctx* ctx = nullptr;
    bool json = false;
    std::string cors_origin; // echoed when the request's Origin is allowed
    std::shared_ptr<const subscription_settings> settings;
};

class forms_connector {
public:
    forms_connector(const wb_host_api* api, wb_host* host, connector_config cfg)
        : api_(api), host_(host), cfg_(std::move(cfg)) {}

    wb_status subscribe(const wb_subscription& sub, char* err, std::size_t err_size) {
        try {
            auto s = std::make_shared<const subscription_settings>(
                parse_settings(view(sub.id), view(sub.settings_json)));
            std::lock_guard lock(mu_);
            subs_[std::string(view(sub.id))] = std::move(s);
            return WB_OK;
        } catch (const config_error& e) {
            copy_error(err, err_size, e.message);
            return WB_ERR_INVALID;
        }
    }

    void unsubscribe(std::string_view id) {
        std::lock_guard lock(mu_);
        subs_.erase(std::string(id));
    }

    void on_request(wb_request_ctx* ctx, const wb_http_request& r) {
        std::shared_ptr<const subscription_settings> s;
        {
            std::lock_guard lock(mu_);
            auto it = subs_.find(std::string(view(r.subscription_id)));
            if (it != subs_.end()) {
                s = it->second;
            }
        }
        request_shape shape;
        shape.ctx = ctx;
        shape.json = wants_json(find_header(r, "accept"));
        shape.settings = s;
        if (!s) {
            finish_error(shape, 404, "not_found", "no such form subscription");
            return;
        }
        auto origin = find_header(r, "origin");
        if (origin && origin_allowed(origin, std::nullopt, s->allowed_origins)) {
            shape.cors_origin = *normalize_origin(*origin);
        }
        auto method = view(r.method);
        auto target = view(r.target);
        auto path = target.substr(0, target.find('?'));
        if (method == "GET" && path.size() >= 6 && path.substr(path.size() - 6) == "/token") {
            issue_token(shape, r, *s);
            return;
        }
        if (method == "OPTIONS") {
            // CORS preflight for fetch() posts with Accept: application/json.
            reply rep{204, {}, {}};
            add_cors(rep, shape);
            rep.headers.emplace_back("access-control-allow-methods", "POST, GET");
            rep.headers.emplace_back("access-control-allow-headers", "content-type, accept");
            send(ctx, rep);
            return;
        }
        if (method != "POST") {
            finish_error(shape, 405, "method_not_allowed", "forms accept POST");
            return;
        }
        handle_post(shape, r, *s);
    }

    // In-flight submits hold the connector alive: stop/destroy wait for their callbacks.
    bool wait_idle(std::int64_t deadline_ms) {
        std::unique_lock lock(mu_);
        auto now = api_->now_ms(host_);
        auto wait_ms = deadline_ms > now ? deadline_ms - now : 0;
        return idle_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                                 [&] { return in_flight_ == 0; });
    }
    void wait_idle_forever() {
        std::unique_lock lock(mu_);
        idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
    }

private:
    struct submit_ctx {
        forms_connector* self;
        request_shape shape;
    };

    void log(wb_log_level level, std::string_view json_line) {
        api_->log(host_, level, str(json_line));
    }

    void send(wb_request_ctx* ctx, const reply& rep) {
        std::vector<wb_header> hs;
        hs.reserve(rep.headers.size());
        for (const auto& [k, v] : rep.headers) {
            hs.push_back(wb_header{str(k), str(v)});
        }
        wb_http_response resp{};
        resp.struct_size = sizeof(resp);
        resp.status = rep.status;
        resp.headers = hs.data();
        resp.header_count = hs.size();
        resp.body = str(rep.body);
        api_->respond(host_, ctx, &resp);
    }

    void add_cors(reply& rep, const request_shape& shape) {
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

    void finish_error(const request_shape& shape, int status, std::string_view code,
                      std::string_view message, std::optional<int> retry_after = std::nullopt) {
        reply rep;
        if (!shape.json && shape.settings && !shape.settings->error_url.empty()) {
            rep.status = 303;
            rep.headers.emplace_back("location",
                                     with_query(shape.settings->error_url, "error", code));
        } else {
            rep.status = status;
            rep.headers.emplace_back("content-type", "application/json");
            rep.body = error_envelope(code, message, retry_after);
        }
        if (retry_after) {
            rep.headers.emplace_back("retry-after", std::to_string(*retry_after));
        }
        rep.headers.emplace_back("cache-control", "no-store");
        add_cors(rep, shape);
        send(shape.ctx, rep);
    }

    void finish_success(const request_shape& shape, std::string_view outcome,
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
        send(shape.ctx, rep);
    }

    std::int64_t now_s() { return api_->now_ms(host_) / 1000; }

    void issue_token(const request_shape& shape, const wb_http_request& r,
                     const subscription_settings& s) {
        if (s.token_secret.empty()) {
            finish_error(shape, 404, "not_found", "this form does not use tokens");
            return;
        }
        std::uint8_t nonce[16];
        if (api_->random_bytes(host_, nonce, sizeof nonce) != WB_OK) {
            finish_error(shape, 503, "unavailable", "no randomness available", 1);
            return;
        }
        auto nonce_hex =
            sig::to_hex(std::string_view(reinterpret_cast<const char*>(nonce), sizeof nonce));
        auto expiry = now_s() + s.token_ttl_s;
        boost::json::object o{{"token", issue_form_token(s.token_secret, s.id, expiry, nonce_hex)},
                              {"field", s.token_field},
                              {"expiresAt", expiry}};
        reply rep{200, {{"content-type", "application/json"}, {"cache-control", "no-store"}},
                  boost::json::serialize(o)};
        add_cors(rep, shape);
        send(shape.ctx, rep);
    }

    void handle_post(request_shape& shape, const wb_http_request& r,
                     const subscription_settings& s) {
        auto body = view(r.body);
        if (body.size() > cfg_.max_body_bytes) {
            finish_error(shape, 413, "payload_too_large", "the form body is too large");
            return;
        }
        auto ct_text = find_header(r, "content-type");
        auto ct = parse_header_value(ct_text.value_or(""));
        param_list fields;
        std::vector<multipart_part> file_parts;
        std::vector<form_part_info> file_infos;
        if (ct.value == "application/x-www-form-urlencoded") {
            auto parsed = parse_urlencoded(body);
            if (!parsed) {
                finish_error(shape, 400, "validation_error", "malformed urlencoded body");
                return;
            }
            fields = std::move(*parsed);
        } else if (ct.value == "multipart/form-data") {
            auto boundary = boundary_of(*ct_text);
            if (!boundary) {
                finish_error(shape, 400, "validation_error", "multipart body without a boundary");
                return;
            }
            auto parsed = parse_multipart(body, *boundary, cfg_.limits);
            if (parsed.error != multipart_error::none) {
                bool size = parsed.error == multipart_error::part_too_large ||
                            parsed.error == multipart_error::too_large ||
                            parsed.error == multipart_error::too_many_parts;
                finish_error(shape, size ? 413 : 400,
                             size ? "payload_too_large" : "validation_error",
                             std::string("multipart body refused: ") +
                                 std::string(to_string(parsed.error)));
                return;
            }
            for (auto& part : parsed.parts) {
                auto info = form_part_info_of(part);
                if (!info) {
                    finish_error(shape, 400, "validation_error",
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
            finish_error(shape, 415, "unsupported_media_type",
                         "forms accept application/x-www-form-urlencoded or multipart/form-data");
            return;
        }

        if (!origin_allowed(find_header(r, "origin"), find_header(r, "referer"),
                            s.allowed_origins)) {
            log(WB_LOG_INFO, R"({"event":"form.refused","reason":"origin_not_allowed"})");
            finish_error(shape, 403, "forbidden", "origin not allowed");
            return;
        }
        if (!s.token_secret.empty()) {
            auto token = field_value(fields, s.token_field);
            auto verdict = verify_form_token(
                s.token_secret, s.id,
                token ? std::optional<std::string_view>(*token) : std::nullopt, now_s());
            if (verdict != token_verdict::valid) {
                log(WB_LOG_INFO, std::string(R"({"event":"form.refused","reason":"token_)") +
                                     std::string(to_string(verdict)) + "\"}");
                finish_error(shape, 403, "forbidden", "form token missing, invalid or expired");
                return;
            }
            remove_field(fields, s.token_field);
        }
        if (!s.honeypot_field.empty()) {
            auto trap = field_value(fields, s.honeypot_field);
            if (trap && !trap->empty()) {
                // Answer like a success so the bot learns nothing; submit nothing.
                log(WB_LOG_INFO, R"({"event":"form.refused","reason":"honeypot"})");
                finish_success(shape, "accepted", "");
                return;
            }
            remove_field(fields, s.honeypot_field);
        }

        std::vector<stored_file> files;
        for (std::size_t i = 0; i < file_parts.size(); ++i) {
            char ref[128] = {};
            if (api_->store_attachment(host_, str(file_parts[i].body), ref, sizeof ref) != WB_OK) {
                finish_error(shape, 503, "store_unavailable", "could not store the upload", 5);
                return;
            }
            stored_file f;
            f.ref = ref;
            f.filename = file_infos[i].filename.value_or("");
            f.media_type = file_infos[i].media_type.empty() ? "application/octet-stream"
                                                            : file_infos[i].media_type;
            f.bytes = file_parts[i].body.size();
            f.sha256_hex = sig::to_hex(sig::sha256(file_parts[i].body));
            files.push_back(std::move(f));
        }

        auto received = r.received_at_ms > 0 ? r.received_at_ms : api_->now_ms(host_);
        auto event_id = provider_event_id(
            s.id, fields, files,
            s.submission_id_field.empty()
                ? std::nullopt
                : std::optional<std::string_view>(s.submission_id_field),
            received, s.dedup_window_s);
        auto content = form_content_json(fields, files);

        wb_inbound_event ev{};
        ev.struct_size = sizeof(ev);
        ev.subscription_id = str(s.id);
        ev.provider_event_id = str(event_id);
        ev.received_at_ms = received;
        ev.verified = 1; // origin (and token when configured) checked
        ev.content_json = str(content);

        auto* sc = new submit_ctx{this, shape};
        {
            std::lock_guard lock(mu_);
            ++in_flight_;
        }
        if (api_->submit(host_, &ev, &forms_connector::on_submitted, sc) != WB_OK) {
            delete sc;
            release();
            finish_error(shape, 503, "overloaded", "the bridge cannot take the submission now", 5);
        }
    }

    void release() {
        std::lock_guard lock(mu_);
        --in_flight_;
        idle_cv_.notify_all();
    }

    static void on_submitted(void* user, const wb_submit_outcome* out) {
        std::unique_ptr<submit_ctx> sc(static_cast<submit_ctx*>(user));
        auto* self = sc->self;
        try {
            switch (out->status) {
            case WB_SUBMIT_ACCEPTED:
            case WB_SUBMIT_HELD:
                self->finish_success(sc->shape, "accepted", view(out->run_id));
                break;
            case WB_SUBMIT_DUPLICATE:
                self->finish_success(sc->shape, "duplicate", view(out->run_id));
                break;
            case WB_SUBMIT_REFUSED:
            default: {
                auto reason = view(out->reason);
                if (reason == "subscription_not_active") {
                    self->finish_error(sc->shape, 409, "subscription_not_active",
                                       "the form subscription is not active");
                } else if (reason == "not_found") {
                    self->finish_error(sc->shape, 404, "not_found", "no such form subscription");
                } else if (reason == "invalid") {
                    self->finish_error(sc->shape, 400, "validation_error",
                                       "the submission was refused as invalid");
                } else {
                    int retry = out->retry_after_seconds > 0 ? out->retry_after_seconds : 5;
                    self->finish_error(sc->shape, 503,
                                       reason == "store_unavailable" ? "store_unavailable"
                                                                     : "overloaded",
                                       "the bridge cannot take the submission now", retry);
                }
                break;
            }
            }
        } catch (...) {
            self->log(WB_LOG_ERROR, R"({"event":"form.respond_failed"})");
        }
        self->release();
    }

    const wb_host_api* api_;
    wb_host* host_;
    connector_config cfg_;
    std::mutex mu_;
    std::condition_variable idle_cv_;
    std::size_t in_flight_ = 0;
    std::map<std::string, std::shared_ptr<const subscription_settings>> subs_;
};

// ---- C ABI trampolines ------------------------------------------------------------------------

forms_connector* self_of(wb_connector* c) {
    return reinterpret_cast<forms_connector*>(c);
}

wb_status do_validate(wb_str config, char* err, std::size_t err_size) noexcept {
    try {
        parse_config(view(config));
        return WB_OK;
    } catch (const config_error& e) {
        copy_error(err, err_size, e.message);
        return WB_ERR_INVALID;
    } catch (...) {
        copy_error(err, err_size, "internal error");
        return WB_ERR_INTERNAL;
    }
}

wb_status do_create(const wb_host_api* api, wb_host* host, wb_str config, wb_connector** out,
                    char* err, std::size_t err_size) noexcept {
    try {
        if (api == nullptr || out == nullptr ||
            api->struct_size < offsetof(wb_host_api, store_attachment) + sizeof(void*)) {
            copy_error(err, err_size, "host API too old: store_attachment missing");
            return WB_ERR_UNSUPPORTED;
        }
        auto* c = new forms_connector(api, host, parse_config(view(config)));
        *out = reinterpret_cast<wb_connector*>(c);
        return WB_OK;
    } catch (const config_error& e) {
        copy_error(err, err_size, e.message);
        return WB_ERR_INVALID;
    } catch (...) {
        copy_error(err, err_size, "internal error");
        return WB_ERR_INTERNAL;
    }
}

wb_status do_start(wb_connector*) noexcept {
    return WB_OK;
}

wb_status do_subscribe(wb_connector* c, const wb_subscription* sub, char* err,
                       std::size_t err_size) noexcept {
    try {
        return self_of(c)->subscribe(*sub, err, err_size);
    } catch (...) {
        copy_error(err, err_size, "internal error");
        return WB_ERR_INTERNAL;
    }
}

wb_status do_unsubscribe(wb_connector* c, wb_str id) noexcept {
    try {
        self_of(c)->unsubscribe(view(id));
        return WB_OK;
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

void do_request(wb_connector* c, wb_request_ctx* ctx, const wb_http_request* r) noexcept {
    try {
        self_of(c)->on_request(ctx, *r);
    } catch (...) {
        // The request must still be answered exactly once; a throw before respond() lands here.
        // (respond() itself does not throw.)
    }
}

wb_status do_stop(wb_connector* c, std::int64_t deadline_ms) noexcept {
    try {
        return self_of(c)->wait_idle(deadline_ms) ? WB_OK : WB_ERR_BUSY;
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

void do_destroy(wb_connector* c) noexcept {
    auto* self = self_of(c);
    try {
        self->wait_idle_forever();
    } catch (...) {
    }
    delete self;
}

const wb_connector_descriptor descriptor = {
    sizeof(wb_connector_descriptor),
    WOPBRIDGE_ABI_MAJOR,
    WOPBRIDGE_ABI_MINOR,
    "forms",
    "1.0.0",
    "alpha",
    "Checks Origin/Referer against an allow-list, optional HMAC form tokens and a honeypot; "
    "browsers are not authenticated, so treat all fields as untrusted.",
    WOPBRIDGE_SDK_BUILD_ID,
    "form",
    config_schema,
    subscription_schema,
    WB_CAP_HTTP_INGEST | WB_CAP_TOKEN_GET,
    &do_validate,
    &do_create,
    &do_start,
    &do_subscribe,
    &do_unsubscribe,
    &do_request,
    &do_stop,
    &do_destroy,
};

} // namespace
} // namespace wopbridge::forms

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    return &wopbridge::forms::descriptor;
}
