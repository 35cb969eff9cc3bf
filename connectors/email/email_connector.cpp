// The email connector module: an SMTP listener (WB_CAP_LISTENER) and an inbound-parse webhook
// (WB_CAP_HTTP_INGEST) on the same module. Built on the SDK's C++ wrapper (connector.hpp), which
// owns the C ABI trampolines and catches everything at the boundary.

#include "email_config.hpp"
#include "email_event.hpp"
#include "inbound_parse.hpp"
#include "mime.hpp"
#include "smtp_server.hpp"

#include <wopbridge/connector.hpp>
#include <wopbridge/http_util.hpp>
#include <wopbridge/json_reply.hpp>
#include <wopbridge/multipart.hpp>
#include <wopbridge/signatures.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace wopbridge::email {
namespace {

// The inbound-parse webhook's error replies carry their retry hint in the body's details too.
void send_error(request_handle& req, int status_code, std::string_view code,
                std::string_view message, int retry_after_seconds = 0) {
    respond_error(req, status_code, code, message, retry_after_seconds,
                  retry_hint::header_and_details);
}

// Collects the outcomes of several submits (one per matched subscription) for one SMTP message.
// Shared with the callbacks so it outlives the last one however the threads interleave.
struct submit_batch {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t pending = 0;
    bool all_committed = true;
    bool content_refused = false; // the host refused the content: permanent, not a retry
};

class email_connector final : public connector {
  public:
    static connector_info info() {
        return connector_info{
            .name = "email",
            .version = "1.0.0",
            .status = "alpha",
            .security_posture =
                "SMTP: trusts the envelope (optional AUTH PLAIN, STARTTLS), no SPF/DKIM/DMARC "
                "evaluation; inbound-parse webhook: HMAC-SHA256 over timestamp+token, replay "
                "cache.",
            .source = "email",
            .config_schema_json = config_schema_json,
            .subscription_schema_json = subscription_schema_json,
            .capabilities = WB_CAP_HTTP_INGEST | WB_CAP_LISTENER};
    }

    static status validate(std::string_view config, std::string& error) {
        return json_config::status_of_reading(error, [&] { parse_config(config); });
    }

    email_connector(host& h, std::string_view config)
        : host_(h), cfg_(parse_config(config)),
          replay_(cfg_.replay_cache_size, 2 * cfg_.webhook_tolerance_s) {
        if (!WOPBRIDGE_API_HAS(h.api(), store_attachment)) {
            throw std::runtime_error("host API too old: store_attachment missing");
        }
    }

    ~email_connector() override {
        server_.reset(); // waits for sessions, which wait for their submits
        std::unique_lock lock(mu_);
        idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
    }

    status start() override {
        if (!cfg_.listen) {
            return status::ok;
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
        hooks.has_capacity = [this] { return host_.has_capacity(); };
        hooks.check_auth = [this](std::string_view u, std::string_view p) {
            // Both compared in full, constant time, so neither leaks by timing.
            bool user_ok = sig::constant_time_equal(u, cfg_.auth_user);
            bool pass_ok = sig::constant_time_equal(p, cfg_.auth_password);
            return user_ok && pass_ok;
        };
        server_ = std::make_unique<smtp_server>(
            sc, hooks, [this](smtp_envelope&& env) { return deliver(std::move(env)); },
            [this](int level, const std::string& line) {
                host_.log(static_cast<log_level>(level), line);
            });
        auto error = server_->start();
        if (!error.empty()) {
            server_.reset();
            host_.log(log_level::error, std::string(R"({"event":"smtp.listen_failed","reason":)") +
                                            boost::json::serialize(boost::json::string(error)) +
                                            "}");
            return status::invalid;
        }
        host_.log(log_level::info, R"({"event":"smtp.listening","port":)" +
                                       std::to_string(server_->bound_port()) + "}");
        return status::ok;
    }

    status stop(std::int64_t deadline_ms) override {
        auto remaining = [&] {
            auto now = host_.now_ms();
            return deadline_ms > now ? deadline_ms - now : 0;
        };
        bool ok = true;
        if (server_) {
            ok = server_->stop(remaining());
        }
        std::unique_lock lock(mu_);
        ok = idle_cv_.wait_for(lock, std::chrono::milliseconds(remaining()), [&] {
            return in_flight_ == 0;
        }) && ok;
        return ok ? status::ok : status::busy;
    }

    status subscribe(const subscription_info& sub, std::string& error) override {
        return json_config::status_of_reading(error, [&] {
            auto addrs = parse_addresses(sub.settings_json);
            std::lock_guard lock(mu_);
            subs_[std::string(sub.id)] = std::move(addrs);
        });
    }

    status unsubscribe(std::string_view id) override {
        std::lock_guard lock(mu_);
        subs_.erase(std::string(id));
        return status::ok;
    }

    void on_http_request(request_handle req, const http_request_view& r) override;

  private:
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
        if (host_.api()->store_attachment(host_.handle(), wb_str{bytes.data(), bytes.size()}, ref,
                                          sizeof ref) != WB_OK) {
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
            host_.log(log_level::info,
                      R"({"event":"smtp.rejected","reason":"unparsable_message"})");
            return smtp_session::commit_result::rejected;
        }
        if (msg->unconverted_charset) {
            host_.log(log_level::info, R"({"event":"email.charset_unconverted"})");
        }
        if (msg->truncated_structure) {
            host_.log(log_level::warn, R"({"event":"email.structure_truncated"})");
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
                host_.log(log_level::warn,
                          R"({"event":"smtp.deferred","reason":"attachment_store_failed"})");
                return smtp_session::commit_result::temporary_failure;
            }
            content.attachments.push_back(std::move(*ref));
        }
        if (msg->unconverted_charset || !email_content_is_utf8(content)) {
            // Raw 8-bit bytes or an unknown charset lost bytes to U+FFFD: keep the exact message.
            auto ref = store(env.data, original_message_filename, original_message_media_type);
            if (!ref) {
                host_.log(log_level::warn,
                          R"({"event":"smtp.deferred","reason":"attachment_store_failed"})");
                return smtp_session::commit_result::temporary_failure;
            }
            content.attachments.push_back(std::move(*ref));
        }
        inbound_event ev;
        ev.content_json = email_content_json(content);
        ev.provider_event_id = email_event_id(msg->message_id, env.data);
        ev.received_at_ms = host_.now_ms();
        ev.verified = !cfg_.auth_user.empty();
        auto batch = std::make_shared<submit_batch>();
        for (const auto& id : subs) {
            ev.subscription_id = id;
            {
                std::lock_guard lock(batch->mu);
                ++batch->pending;
            }
            auto st = host_.submit(ev, [batch](const submit_outcome& out) {
                std::lock_guard lock(batch->mu);
                if (out.kind == outcome_kind::refused) {
                    batch->all_committed = false;
                }
                --batch->pending;
                batch->cv.notify_all();
            });
            if (st != status::ok) {
                std::lock_guard lock(batch->mu);
                --batch->pending;
                batch->all_committed = false;
                batch->content_refused = batch->content_refused || st == status::invalid;
            }
        }
        std::unique_lock lock(batch->mu);
        batch->cv.wait(lock, [&] { return batch->pending == 0; });
        if (batch->all_committed) {
            return smtp_session::commit_result::committed;
        }
        return batch->content_refused ? smtp_session::commit_result::rejected
                                      : smtp_session::commit_result::temporary_failure;
    }

    void release() {
        std::lock_guard lock(mu_);
        --in_flight_;
        idle_cv_.notify_all();
    }

    void on_webhook_submitted(request_handle& req, const std::string& token,
                              const submit_outcome& out) {
        if (out.kind != outcome_kind::refused) {
            boost::json::object o{
                {"outcome", out.kind == outcome_kind::duplicate ? "duplicate" : "accepted"}};
            if (!out.run_id.empty()) {
                o["runId"] = out.run_id;
            }
            req.respond(200, {{"content-type", "application/json"}}, boost::json::serialize(o));
            return;
        }
        // Nothing was committed: the provider's retry (same token) must be able to pass.
        replay_.release(token);
        // An invalid refusal is answered like an overload here (a 503 the provider retries).
        static constexpr refusal_wording wording{
            .not_active = "the email subscription is not active",
            .not_found = "no such email subscription",
            .invalid = {},
            .unavailable = "the bridge cannot take the message now",
            .store_has_own_code = false,
            .default_retry_after_seconds = 5};
        const auto refusal = refusal_reply(out, wording);
        send_error(req, refusal.status, refusal.code, refusal.message, refusal.retry_after_seconds);
    }

    host& host_;
    email_config cfg_;
    token_replay_cache replay_;
    std::mutex mu_;
    std::condition_variable idle_cv_;
    std::size_t in_flight_ = 0;
    std::map<std::string, std::vector<std::string>> subs_;
    std::unique_ptr<smtp_server> server_;
};

void email_connector::on_http_request(request_handle req, const http_request_view& r) {
    bool known;
    {
        std::lock_guard lock(mu_);
        known = subs_.count(std::string(r.subscription_id)) != 0;
    }
    if (!known) {
        send_error(req, 404, "not_found", "no such email subscription");
        return;
    }
    if (cfg_.webhook_key.empty()) {
        send_error(req, 404, "not_found", "the inbound-parse webhook is not configured");
        return;
    }
    if (r.method != "POST") {
        send_error(req, 405, "method_not_allowed", "inbound-parse webhooks are POSTed");
        return;
    }
    auto body = r.body;
    if (body.size() > cfg_.max_webhook_bytes) {
        send_error(req, 413, "payload_too_large", "the message is too large");
        return;
    }
    auto ct_text = r.header("content-type").value_or("");
    auto ct = http::parse_header_value(ct_text);
    std::vector<http::multipart_part> parts;
    if (ct.value == "multipart/form-data") {
        auto boundary = http::boundary_of(ct_text);
        http::multipart_limits limits;
        limits.max_total_bytes = cfg_.max_webhook_bytes;
        limits.max_part_bytes = cfg_.max_webhook_bytes;
        limits.max_parts = 64 + cfg_.max_attachments;
        auto parsed = boundary ? http::parse_multipart(body, *boundary, limits)
                               : http::multipart_result{http::multipart_error::no_boundary, {}};
        if (parsed.error != http::multipart_error::none) {
            send_error(req, 400, "validation_error", "malformed multipart body");
            return;
        }
        parts = std::move(parsed.parts);
    } else if (ct.value == "application/x-www-form-urlencoded") {
        auto fields = http::parse_form_urlencoded(body);
        if (!fields) {
            send_error(req, 400, "validation_error", "malformed urlencoded body");
            return;
        }
        for (auto& [k, v] : *fields) {
            http::multipart_part p;
            p.headers.emplace_back("content-disposition",
                                   "form-data; name=" +
                                       boost::json::serialize(boost::json::string(k)));
            p.body = std::move(v);
            parts.push_back(std::move(p));
        }
    } else {
        send_error(req, 415, "unsupported_media_type", "expected multipart/form-data");
        return;
    }
    auto mail = inbound_mail_of(parts);
    if (!mail) {
        send_error(req, 400, "validation_error", "malformed form part");
        return;
    }
    auto now_s = host_.now_ms() / 1000;
    auto verdict = verify_inbound_signature(cfg_.webhook_key, mail->timestamp, mail->token,
                                            mail->signature, now_s, cfg_.webhook_tolerance_s);
    if (verdict != parse_verdict::valid) {
        host_.log(log_level::info, std::string(R"({"event":"email.webhook_refused","reason":")") +
                                       std::string(to_string(verdict)) + "\"}");
        send_error(req, 401, "signature_invalid", "inbound-parse signature invalid");
        return;
    }
    if (!replay_.reserve(mail->token, now_s)) {
        host_.log(log_level::info,
                  R"({"event":"email.webhook_refused","reason":"token_replayed"})");
        send_error(req, 401, "signature_invalid", "inbound-parse token already used");
        return;
    }
    email_content content;
    content.from = mail->from;
    content.to = mail->to;
    content.subject = mail->subject;
    content.text = mail->text;
    content.html = mail->html;
    for (auto& f : mail->files) {
        auto ref = store(f.bytes, f.filename, f.media_type);
        if (!ref) {
            replay_.release(mail->token);
            send_error(req, 503, "store_unavailable", "could not store an attachment", 5);
            return;
        }
        content.attachments.push_back(std::move(*ref));
    }
    if (!email_content_is_utf8(content)) {
        // The provider's post is the only exact copy of those bytes: keep it as the original.
        auto ref = store(r.body, original_request_filename, ct.value);
        if (!ref) {
            replay_.release(mail->token);
            send_error(req, 503, "store_unavailable", "could not store an attachment", 5);
            return;
        }
        content.attachments.push_back(std::move(*ref));
    }
    inbound_event ev;
    ev.subscription_id = std::string(r.subscription_id);
    // The dedup identity is the message's, not the post's: a captured post replayed after a
    // restart (the token cache above is memory only) carries the same Message-Id / content and is
    // a duplicate in the bridge's durable dedup, so it starts no second run. The token is left out
    // on purpose: the provider signs each retry of a message afresh, and a retry must dedup too.
    // Without a Message-Id, the identity is the bytes received (not the sanitized text: two mails
    // differing only in bytes that are not UTF-8 are two mails).
    ev.provider_event_id = email_event_id(mail->message_id, mail->received_identity);
    ev.received_at_ms = r.received_at_ms > 0 ? r.received_at_ms : host_.now_ms();
    ev.verified = true;
    ev.content_json = email_content_json(content);
    {
        std::lock_guard lock(mu_);
        ++in_flight_;
    }
    auto shared_req = std::make_shared<request_handle>(std::move(req));
    auto token = mail->token;
    auto st = host_.submit(ev, [this, shared_req, token](const submit_outcome& out) {
        on_webhook_submitted(*shared_req, token, out);
        release();
    });
    if (st != status::ok) {
        replay_.release(token);
        release();
        if (st == status::invalid) {
            // The host refused the content itself: a retry would be refused again.
            send_error(*shared_req, 400, "validation_error",
                       "the bridge refused the message content as malformed");
            return;
        }
        send_error(*shared_req, 503, "overloaded", "the bridge cannot take the message now", 5);
    }
}

} // namespace
} // namespace wopbridge::email

WOPBRIDGE_CONNECTOR(wopbridge::email::email_connector)
