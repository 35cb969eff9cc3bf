// The email connector module: an SMTP listener (WB_CAP_LISTENER) and an inbound-parse webhook
// (WB_CAP_HTTP_INGEST) on the same module. Written against the C ABI (connector.h) with thin
// trampolines at the bottom; every entry point catches everything at its edge.

#include "email_event.hpp"
#include "inbound_parse.hpp"
#include "mime.hpp"
#include "smtp_server.hpp"

#include "forms/form_logic.hpp"
#include "forms/multipart.hpp"

#include <wopbridge/connector.h>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace wopbridge::email {
namespace {

constexpr const char* config_schema = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "listen": {"type": "string", "default": "127.0.0.1:2525",
               "description": "host:port of the SMTP listener; port 0 = ephemeral; \"\" = no listener"},
    "hostname": {"type": "string", "default": "localhost"},
    "maxMessageBytes": {"type": "integer", "minimum": 1024, "default": 26214400},
    "maxRecipients": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100},
    "maxConnections": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 32},
    "maxAttachments": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 64},
    "commandTimeout": {"type": "integer", "minimum": 1, "default": 300},
    "dataTimeout": {"type": "integer", "minimum": 1, "default": 600},
    "tls": {"type": "object", "additionalProperties": false, "required": ["certFile", "keyFile"],
            "properties": {"certFile": {"type": "string"}, "keyFile": {"type": "string"}}},
    "auth": {"type": "object", "additionalProperties": false, "required": ["username", "password"],
             "properties": {"username": {"type": "string"},
                            "password": {"type": "string", "writeOnly": true}}},
    "webhookSigningKey": {"type": "string", "writeOnly": true},
    "webhookTolerance": {"type": "integer", "minimum": 1, "maximum": 86400, "default": 300},
    "replayCacheSize": {"type": "integer", "minimum": 16, "default": 10000},
    "maxWebhookBytes": {"type": "integer", "minimum": 1024, "default": 26214400}
  }
})json";

constexpr const char* subscription_schema = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "addresses": {"type": "array", "items": {"type": "string"},
                  "description": "RCPT TO addresses routed to this subscription (SMTP)"}
  }
})json";

struct config_error {
    std::string message;
};

struct email_config {
    bool listen = true;
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 2525;
    std::string hostname = "localhost";
    std::size_t max_message_bytes = 25 * 1024 * 1024;
    std::size_t max_recipients = 100;
    std::size_t max_connections = 32;
    std::size_t max_attachments = 64;
    std::int64_t command_timeout_s = 300;
    std::int64_t data_timeout_s = 600;
    std::string tls_cert;
    std::string tls_key;
    std::string auth_user;
    std::string auth_password;
    std::string webhook_key;
    std::int64_t webhook_tolerance_s = 300;
    std::size_t replay_cache_size = 10000;
    std::size_t max_webhook_bytes = 25 * 1024 * 1024;
};

boost::json::value parse_json(std::string_view text, std::string_view what) {
    boost::system::error_code ec;
    auto v = boost::json::parse(text.empty() ? std::string_view("{}") : text, ec);
    if (ec || !v.is_object()) {
        throw config_error{std::string(what) + " must be a JSON object"};
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

std::string get_string(const boost::json::object& o, std::string_view key, std::string def,
                       bool allow_empty = false) {
    auto it = o.find(key);
    if (it == o.end()) {
        return def;
    }
    if (!it->value().is_string() || (!allow_empty && it->value().as_string().empty())) {
        throw config_error{std::string(key) + " must be a non-empty string"};
    }
    return std::string(it->value().as_string());
}

void check_keys(const boost::json::object& o, std::initializer_list<std::string_view> known,
                std::string_view where) {
    for (const auto& kv : o) {
        if (std::find(known.begin(), known.end(), kv.key()) == known.end()) {
            throw config_error{"unknown " + std::string(where) + " key " + std::string(kv.key())};
        }
    }
}

email_config parse_config(std::string_view json) {
    auto v = parse_json(json, "config");
    const auto& o = v.as_object();
    check_keys(o,
               {"listen", "hostname", "maxMessageBytes", "maxRecipients", "maxConnections",
                "maxAttachments", "commandTimeout", "dataTimeout", "tls", "auth",
                "webhookSigningKey", "webhookTolerance", "replayCacheSize", "maxWebhookBytes"},
               "config");
    email_config c;
    auto listen = get_string(o, "listen", "127.0.0.1:2525", true);
    if (listen.empty()) {
        c.listen = false;
    } else {
        auto colon = listen.rfind(':');
        if (colon == std::string::npos) {
            throw config_error{"listen must be host:port"};
        }
        auto host = listen.substr(0, colon);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
            host = host.substr(1, host.size() - 2);
        }
        unsigned port = 0;
        auto ps = std::string_view(listen).substr(colon + 1);
        auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
        if (ec != std::errc{} || p != ps.data() + ps.size() || port > 65535) {
            throw config_error{"listen port must be 0..65535"};
        }
        c.listen_host = host;
        c.listen_port = static_cast<std::uint16_t>(port);
    }
    c.hostname = get_string(o, "hostname", "localhost");
    if (c.hostname.find_first_of(" \r\n\t") != std::string::npos) {
        throw config_error{"hostname must not contain whitespace"};
    }
    c.max_message_bytes = static_cast<std::size_t>(
        get_int(o, "maxMessageBytes", 25 * 1024 * 1024, 1024, std::int64_t{1} << 34));
    c.max_recipients = static_cast<std::size_t>(get_int(o, "maxRecipients", 100, 1, 10000));
    c.max_connections = static_cast<std::size_t>(get_int(o, "maxConnections", 32, 1, 10000));
    c.max_attachments = static_cast<std::size_t>(get_int(o, "maxAttachments", 64, 0, 10000));
    c.command_timeout_s = get_int(o, "commandTimeout", 300, 1, 86400);
    c.data_timeout_s = get_int(o, "dataTimeout", 600, 1, 86400);
    if (auto it = o.find("tls"); it != o.end()) {
        if (!it->value().is_object()) {
            throw config_error{"tls must be an object"};
        }
        const auto& t = it->value().as_object();
        check_keys(t, {"certFile", "keyFile"}, "tls");
        c.tls_cert = get_string(t, "certFile", "");
        c.tls_key = get_string(t, "keyFile", "");
        if (c.tls_cert.empty() || c.tls_key.empty()) {
            throw config_error{"tls needs certFile and keyFile"};
        }
    }
    if (auto it = o.find("auth"); it != o.end()) {
        if (!it->value().is_object()) {
            throw config_error{"auth must be an object"};
        }
        const auto& a = it->value().as_object();
        check_keys(a, {"username", "password"}, "auth");
        c.auth_user = get_string(a, "username", "");
        c.auth_password = get_string(a, "password", "");
        if (c.auth_user.empty() || c.auth_password.empty()) {
            throw config_error{"auth needs username and password"};
        }
    }
    c.webhook_key = get_string(o, "webhookSigningKey", "");
    c.webhook_tolerance_s = get_int(o, "webhookTolerance", 300, 1, 86400);
    c.replay_cache_size =
        static_cast<std::size_t>(get_int(o, "replayCacheSize", 10000, 16, 10'000'000));
    c.max_webhook_bytes = static_cast<std::size_t>(
        get_int(o, "maxWebhookBytes", 25 * 1024 * 1024, 1024, std::int64_t{1} << 34));
    return c;
}

std::vector<std::string> parse_addresses(std::string_view json) {
    auto v = parse_json(json, "settings");
    const auto& o = v.as_object();
    check_keys(o, {"addresses"}, "settings");
    std::vector<std::string> out;
    auto it = o.find("addresses");
    if (it == o.end()) {
        return out;
    }
    if (!it->value().is_array()) {
        throw config_error{"addresses must be an array of strings"};
    }
    for (const auto& a : it->value().as_array()) {
        if (!a.is_string() || a.as_string().empty() ||
            a.as_string().find('@') == boost::json::string::npos) {
            throw config_error{"addresses entries must be mail addresses"};
        }
        std::string addr(a.as_string());
        std::transform(addr.begin(), addr.end(), addr.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        out.push_back(std::move(addr));
    }
    return out;
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

// Collects the outcomes of several submits (one per matched subscription) for one SMTP message.
struct submit_batch {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t pending = 0;
    bool all_committed = true;

    static void done(void* user, const wb_submit_outcome* out) {
        auto* b = static_cast<submit_batch*>(user);
        std::lock_guard lock(b->mu);
        if (out->status == WB_SUBMIT_REFUSED) {
            b->all_committed = false;
        }
        --b->pending;
        b->cv.notify_all();
    }
};

class email_connector {
public:
    email_connector(const wb_host_api* api, wb_host* host, email_config cfg)
        : api_(api), host_(host), cfg_(std::move(cfg)),
          replay_(cfg_.replay_cache_size, 2 * cfg_.webhook_tolerance_s) {}

    ~email_connector() {
        server_.reset();
        std::unique_lock lock(mu_);
        idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
    }

    wb_status start(std::string& error) {
        if (!cfg_.listen) {
            return WB_OK;
        }
        smtp_server_config sc;
        sc.host = cfg_.listen_host;
        sc.port = cfg_.listen_port;
        sc.session.hostname = cfg_.hostname;
        sc.session.max_message_bytes = cfg_.max_message_bytes;
        sc.session.max_recipients = cfg_.max_recipients;
        sc.session.auth_required = !cfg_.auth_user.empty();
        sc.max_connections = cfg_.max_connections;
        sc.command_timeout_ms = cfg_.command_timeout_s * 1000;
        sc.data_timeout_ms = cfg_.data_timeout_s * 1000;
        sc.tls_cert_file = cfg_.tls_cert;
        sc.tls_key_file = cfg_.tls_key;
        smtp_hooks hooks;
        hooks.recipient_known = [this](std::string_view a) { return recipient_known(a); };
        hooks.has_capacity = [this] { return api_->has_capacity(host_) != 0; };
        hooks.check_auth = [this](std::string_view u, std::string_view p) {
            // Both compared in full, constant time, so neither leaks by timing.
            bool user_ok = sig::constant_time_equal(u, cfg_.auth_user);
            bool pass_ok = sig::constant_time_equal(p, cfg_.auth_password);
            return user_ok && pass_ok;
        };
        server_ = std::make_unique<smtp_server>(
            sc, hooks, [this](smtp_envelope&& env) { return deliver(std::move(env)); },
            [this](int level, const std::string& line) {
                api_->log(host_, static_cast<wb_log_level>(level), str(line));
            });
        error = server_->start();
        if (!error.empty()) {
            server_.reset();
            return WB_ERR_INVALID;
        }
        log(WB_LOG_INFO, R"({"event":"smtp.listening","port":)" +
                             std::to_string(server_->bound_port()) + "}");
        return WB_OK;
    }

    wb_status stop(std::int64_t deadline_ms) {
        auto now = api_->now_ms(host_);
        auto wait = deadline_ms > now ? deadline_ms - now : 0;
        bool ok = true;
        if (server_) {
            ok = server_->stop(wait);
        }
        std::unique_lock lock(mu_);
        now = api_->now_ms(host_);
        wait = deadline_ms > now ? deadline_ms - now : 0;
        ok = idle_cv_.wait_for(lock, std::chrono::milliseconds(wait),
                               [&] { return in_flight_ == 0; }) &&
             ok;
        return ok ? WB_OK : WB_ERR_BUSY;
    }

    wb_status subscribe(const wb_subscription& sub, char* err, std::size_t err_size) {
        try {
            auto addrs = parse_addresses(view(sub.settings_json));
            std::lock_guard lock(mu_);
            subs_[std::string(view(sub.id))] = std::move(addrs);
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

    void on_request(wb_request_ctx* ctx, const wb_http_request& r);

private:
    void log(wb_log_level level, const std::string& line) { api_->log(host_, level, str(line)); }

    bool recipient_known(std::string_view address) {
        std::lock_guard lock(mu_);
        for (const auto& [id, addrs] : subs_) {
            if (std::find(addrs.begin(), addrs.end(), address) != addrs.end()) {
                return true;
            }
        }
        return false;
    }

    std::vector<std::string> subscriptions_for(const std::vector<std::string>& recipients) {
        std::lock_guard lock(mu_);
        std::vector<std::string> out;
        for (const auto& [id, addrs] : subs_) {
            for (const auto& r : recipients) {
                if (std::find(addrs.begin(), addrs.end(), r) != addrs.end()) {
                    out.push_back(id);
                    break;
                }
            }
        }
        return out;
    }

    std::optional<attachment_ref> store(std::string_view bytes, std::string filename,
                                        std::string media_type) {
        char ref[128] = {};
        if (api_->store_attachment(host_, str(bytes), ref, sizeof ref) != WB_OK) {
            return std::nullopt;
        }
        return attachment_ref{ref, std::move(filename), std::move(media_type), bytes.size()};
    }

    // Runs on an SMTP session thread: commit one event per matched subscription, then decide the
    // reply. Blocks until every submit outcome is known (the host always calls back).
    smtp_session::commit_result deliver(smtp_envelope&& env) {
        mime_limits limits;
        limits.max_attachments = cfg_.max_attachments;
        auto msg = parse_message(env.data, limits);
        if (!msg) {
            log(WB_LOG_INFO, R"({"event":"smtp.rejected","reason":"unparsable_message"})");
            return smtp_session::commit_result::rejected;
        }
        if (msg->unconverted_charset) {
            log(WB_LOG_INFO, R"({"event":"email.charset_unconverted"})");
        }
        if (msg->truncated_structure) {
            log(WB_LOG_WARN, R"({"event":"email.structure_truncated"})");
        }
        auto subs = subscriptions_for(env.recipients);
        if (subs.empty()) {
            // Unsubscribed between RCPT and the end of DATA: let the sender retry later.
            return smtp_session::commit_result::temporary_failure;
        }
        email_content content;
        content.from = msg->from.empty() ? env.mail_from : msg->from;
        content.to = msg->to.empty() ? env.recipients : msg->to;
        content.subject = msg->subject;
        content.text = msg->text;
        content.html = msg->html;
        for (auto& a : msg->attachments) {
            auto ref = store(a.bytes, a.filename, a.media_type);
            if (!ref) {
                log(WB_LOG_WARN, R"({"event":"smtp.deferred","reason":"attachment_store_failed"})");
                return smtp_session::commit_result::temporary_failure;
            }
            content.attachments.push_back(std::move(*ref));
        }
        auto json = email_content_json(content);
        auto event_id = email_event_id(msg->message_id, env.data);
        auto received = api_->now_ms(host_);
        submit_batch batch;
        for (const auto& id : subs) {
            wb_inbound_event ev{};
            ev.struct_size = sizeof(ev);
            ev.subscription_id = str(id);
            ev.provider_event_id = str(event_id);
            ev.received_at_ms = received;
            ev.verified = cfg_.auth_user.empty() ? 0 : 1;
            ev.content_json = str(json);
            {
                std::lock_guard lock(batch.mu);
                ++batch.pending;
            }
            if (api_->submit(host_, &ev, &submit_batch::done, &batch) != WB_OK) {
                std::lock_guard lock(batch.mu);
                --batch.pending;
                batch.all_committed = false;
            }
        }
        std::unique_lock lock(batch.mu);
        batch.cv.wait(lock, [&] { return batch.pending == 0; });
        return batch.all_committed ? smtp_session::commit_result::committed
                                   : smtp_session::commit_result::temporary_failure;
    }

    struct webhook_ctx {
        email_connector* self;
        wb_request_ctx* ctx;
        std::string token;
    };

    void send(wb_request_ctx* ctx, int status, const std::string& body,
              std::optional<int> retry_after = std::nullopt) {
        std::string retry = retry_after ? std::to_string(*retry_after) : "";
        wb_header hs[2] = {{str("content-type"), str("application/json")},
                           {str("retry-after"), str(retry)}};
        wb_http_response resp{};
        resp.struct_size = sizeof(resp);
        resp.status = status;
        resp.headers = hs;
        resp.header_count = retry_after ? 2 : 1;
        resp.body = str(body);
        api_->respond(host_, ctx, &resp);
    }

    void send_error(wb_request_ctx* ctx, int status, std::string_view code,
                    std::string_view message, std::optional<int> retry_after = std::nullopt) {
        send(ctx, status, forms::error_envelope(code, message, retry_after), retry_after);
    }

    void release() {
        std::lock_guard lock(mu_);
        --in_flight_;
        idle_cv_.notify_all();
    }

    static void on_webhook_submitted(void* user, const wb_submit_outcome* out) {
        std::unique_ptr<webhook_ctx> wc(static_cast<webhook_ctx*>(user));
        auto* self = wc->self;
        try {
            auto run_id = std::string(view(out->run_id));
            switch (out->status) {
            case WB_SUBMIT_ACCEPTED:
            case WB_SUBMIT_HELD:
            case WB_SUBMIT_DUPLICATE: {
                boost::json::object o{
                    {"outcome", out->status == WB_SUBMIT_DUPLICATE ? "duplicate" : "accepted"}};
                if (!run_id.empty()) {
                    o["runId"] = run_id;
                }
                self->send(wc->ctx, 200, boost::json::serialize(o));
                break;
            }
            case WB_SUBMIT_REFUSED:
            default: {
                // Nothing was committed: the provider's retry (same token) must be able to pass.
                self->replay_.release(wc->token);
                auto reason = view(out->reason);
                if (reason == "subscription_not_active") {
                    self->send_error(wc->ctx, 409, "subscription_not_active",
                                     "the email subscription is not active");
                } else if (reason == "not_found") {
                    self->send_error(wc->ctx, 404, "not_found", "no such email subscription");
                } else {
                    int retry = out->retry_after_seconds > 0 ? out->retry_after_seconds : 5;
                    self->send_error(wc->ctx, 503, "overloaded",
                                     "the bridge cannot take the message now", retry);
                }
                break;
            }
            }
        } catch (...) {
            self->log(WB_LOG_ERROR, R"({"event":"email.respond_failed"})");
        }
        self->release();
    }

    const wb_host_api* api_;
    wb_host* host_;
    email_config cfg_;
    token_replay_cache replay_;
    std::mutex mu_;
    std::condition_variable idle_cv_;
    std::size_t in_flight_ = 0;
    std::map<std::string, std::vector<std::string>> subs_;
    std::unique_ptr<smtp_server> server_;
};

void email_connector::on_request(wb_request_ctx* ctx, const wb_http_request& r) {
    bool known;
    {
        std::lock_guard lock(mu_);
        known = subs_.count(std::string(view(r.subscription_id))) != 0;
    }
    if (!known) {
        send_error(ctx, 404, "not_found", "no such email subscription");
        return;
    }
    if (cfg_.webhook_key.empty()) {
        send_error(ctx, 404, "not_found", "the inbound-parse webhook is not configured");
        return;
    }
    if (view(r.method) != "POST") {
        send_error(ctx, 405, "method_not_allowed", "inbound-parse webhooks are POSTed");
        return;
    }
    auto body = view(r.body);
    if (body.size() > cfg_.max_webhook_bytes) {
        send_error(ctx, 413, "payload_too_large", "the message is too large");
        return;
    }
    auto ct_text = find_header(r, "content-type").value_or("");
    auto ct = forms::parse_header_value(ct_text);
    std::vector<forms::multipart_part> parts;
    if (ct.value == "multipart/form-data") {
        auto boundary = forms::boundary_of(ct_text);
        forms::multipart_limits limits;
        limits.max_total_bytes = cfg_.max_webhook_bytes;
        limits.max_part_bytes = cfg_.max_webhook_bytes;
        limits.max_parts = 64 + cfg_.max_attachments;
        auto parsed = boundary ? forms::parse_multipart(body, *boundary, limits)
                               : forms::multipart_result{forms::multipart_error::no_boundary, {}};
        if (parsed.error != forms::multipart_error::none) {
            send_error(ctx, 400, "validation_error", "malformed multipart body");
            return;
        }
        parts = std::move(parsed.parts);
    } else if (ct.value == "application/x-www-form-urlencoded") {
        auto fields = forms::parse_urlencoded(body);
        if (!fields) {
            send_error(ctx, 400, "validation_error", "malformed urlencoded body");
            return;
        }
        for (auto& [k, v] : *fields) {
            forms::multipart_part p;
            p.headers.emplace_back("content-disposition", "form-data; name=\"" + k + "\"");
            p.body = std::move(v);
            parts.push_back(std::move(p));
        }
    } else {
        send_error(ctx, 415, "unsupported_media_type", "expected multipart/form-data");
        return;
    }
    auto mail = inbound_mail_of(parts);
    if (!mail) {
        send_error(ctx, 400, "validation_error", "malformed form part");
        return;
    }
    auto now_s = api_->now_ms(host_) / 1000;
    auto verdict = verify_inbound_signature(cfg_.webhook_key, mail->timestamp, mail->token,
                                            mail->signature, now_s, cfg_.webhook_tolerance_s);
    if (verdict != parse_verdict::valid) {
        log(WB_LOG_INFO, std::string(R"({"event":"email.webhook_refused","reason":")") +
                             std::string(to_string(verdict)) + "\"}");
        send_error(ctx, 401, "signature_invalid", "inbound-parse signature invalid");
        return;
    }
    if (!replay_.reserve(mail->token, now_s)) {
        log(WB_LOG_INFO, R"({"event":"email.webhook_refused","reason":"token_replayed"})");
        send_error(ctx, 401, "signature_invalid", "inbound-parse token already used");
        return;
    }
    email_content content;
    content.from = mail->from;
    content.to = mail->to;
    content.subject = mail->subject;
    content.text = mail->text;
    content.html = mail->html;
    std::string hash_material = mail->from + '\n' + mail->subject + '\n' + mail->text + '\n' +
                                mail->html.value_or("");
    for (const auto& t : mail->to) {
        hash_material += '\n' + t;
    }
    for (auto& f : mail->files) {
        auto ref = store(f.bytes, f.filename, f.media_type);
        if (!ref) {
            replay_.release(mail->token);
            send_error(ctx, 503, "store_unavailable", "could not store an attachment", 5);
            return;
        }
        hash_material += '\n' + sig::to_hex(sig::sha256(f.bytes));
        content.attachments.push_back(std::move(*ref));
    }
    auto json = email_content_json(content);
    auto event_id = email_event_id(mail->message_id, hash_material);
    auto sub_id = std::string(view(r.subscription_id));
    wb_inbound_event ev{};
    ev.struct_size = sizeof(ev);
    ev.subscription_id = str(sub_id);
    ev.provider_event_id = str(event_id);
    ev.received_at_ms = r.received_at_ms > 0 ? r.received_at_ms : api_->now_ms(host_);
    ev.verified = 1;
    ev.content_json = str(json);
    auto* wc = new webhook_ctx{this, ctx, mail->token};
    {
        std::lock_guard lock(mu_);
        ++in_flight_;
    }
    if (api_->submit(host_, &ev, &email_connector::on_webhook_submitted, wc) != WB_OK) {
        replay_.release(mail->token);
        delete wc;
        release();
        send_error(ctx, 503, "overloaded", "the bridge cannot take the message now", 5);
    }
}

// ---- C ABI trampolines ------------------------------------------------------------------------

email_connector* self_of(wb_connector* c) {
    return reinterpret_cast<email_connector*>(c);
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
        *out = reinterpret_cast<wb_connector*>(
            new email_connector(api, host, parse_config(view(config))));
        return WB_OK;
    } catch (const config_error& e) {
        copy_error(err, err_size, e.message);
        return WB_ERR_INVALID;
    } catch (...) {
        copy_error(err, err_size, "internal error");
        return WB_ERR_INTERNAL;
    }
}

wb_status do_start(wb_connector* c) noexcept {
    try {
        std::string error;
        return self_of(c)->start(error);
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
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
    }
}

wb_status do_stop(wb_connector* c, std::int64_t deadline_ms) noexcept {
    try {
        return self_of(c)->stop(deadline_ms);
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

void do_destroy(wb_connector* c) noexcept {
    try {
        delete self_of(c);
    } catch (...) {
    }
}

const wb_connector_descriptor descriptor = {
    sizeof(wb_connector_descriptor),
    WOPBRIDGE_ABI_MAJOR,
    WOPBRIDGE_ABI_MINOR,
    "email",
    "1.0.0",
    "alpha",
    "SMTP: trusts the envelope (optional AUTH PLAIN, STARTTLS experimental), no SPF/DKIM/DMARC "
    "evaluation; inbound-parse webhook: HMAC-SHA256 over timestamp+token, replay cache.",
    WOPBRIDGE_SDK_BUILD_ID,
    "email",
    config_schema,
    subscription_schema,
    WB_CAP_HTTP_INGEST | WB_CAP_LISTENER,
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
} // namespace wopbridge::email

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    return &wopbridge::email::descriptor;
}
