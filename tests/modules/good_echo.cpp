// Test module: a real minimal connector on the C++ wrapper. It logs every lifecycle call (the tests
// read the order from the host log), submits each request and answers only after the commit.
// Per-subscription settings containing "silent" make it hold requests unanswered; a request whose
// target contains "release" then answers the held ones (late), "drop" drops the handle, "task"
// posts a delayed task.
#include "wopbridge/connector.hpp"
#include "wopbridge/signatures.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace {

class good_echo final : public wopbridge::connector {
  public:
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "good_echo";
        i.version = "1.2.3";
        i.status = "alpha";
        i.security_posture = "test module: verifies nothing, trusts every request";
        i.source = "webhook";
        i.config_schema_json = R"({"type":"object","properties":{"greeting":{"type":"string"}}})";
        i.subscription_schema_json =
            R"({"type":"object","properties":{"channel":{"type":"string","minLength":1}}})";
        i.capabilities = WB_CAP_HTTP_INGEST;
        return i;
    }

    static wopbridge::status validate(std::string_view config, std::string& error) {
        if (config.find("\"reject\"") != std::string_view::npos) {
            error = "setting 'reject' is not allowed";
            return wopbridge::status::invalid;
        }
        return wopbridge::status::ok;
    }

    good_echo(wopbridge::host& host, std::string_view config) : host_(host) {
        if (config.find("\"throw\"") != std::string_view::npos) {
            throw std::invalid_argument("setting 'throw' makes the constructor refuse");
        }
        host_.log(wopbridge::log_level::info, "lifecycle create");
    }
    ~good_echo() override { host_.log(wopbridge::log_level::info, "lifecycle destroy"); }

    wopbridge::status start() override {
        host_.log(wopbridge::log_level::info, "lifecycle start");
        return wopbridge::status::ok;
    }

    wopbridge::status subscribe(const wopbridge::subscription_info& sub,
                                std::string& error) override {
        if (sub.settings_json.find("\"refuse\"") != std::string_view::npos) {
            error = "subscription setting 'refuse' is not allowed";
            return wopbridge::status::invalid;
        }
        std::lock_guard lk(mu_);
        subs_[std::string(sub.id)] = std::string(sub.settings_json);
        host_.log(wopbridge::log_level::info,
                  "lifecycle subscribe " + std::string(sub.id) + " " + std::string(sub.ingest_url));
        return wopbridge::status::ok;
    }

    wopbridge::status unsubscribe(std::string_view id) override {
        std::lock_guard lk(mu_);
        subs_.erase(std::string(id));
        host_.log(wopbridge::log_level::info, "lifecycle unsubscribe " + std::string(id));
        return wopbridge::status::ok;
    }

    void on_http_request(wopbridge::request_handle req,
                         const wopbridge::http_request_view& r) override {
        std::string settings;
        {
            std::lock_guard lk(mu_);
            auto it = subs_.find(std::string(r.subscription_id));
            if (it == subs_.end()) {
                req.respond(404);
                return;
            }
            settings = it->second;
        }
        if (r.target.find("release") != std::string_view::npos) {
            std::vector<wopbridge::request_handle> held;
            {
                std::lock_guard lk(mu_);
                held.swap(held_);
            }
            for (auto& h : held) {
                const auto st = h.respond(200, {}, "late");
                host_.log(wopbridge::log_level::info,
                          "late respond status " + std::to_string(static_cast<int>(st)));
            }
            req.respond(200, {{"content-type", "text/plain"}}, "released");
            return;
        }
        if (r.target.find("drop") != std::string_view::npos) {
            return; // the wrapper answers 500 for a dropped handle
        }
        if (r.target.find("task") != std::string_view::npos) {
            host_.post_task(60'000,
                            [&h = host_] { h.log(wopbridge::log_level::info, "task ran"); });
            req.respond(202);
            return;
        }
        if (r.target.find("register") != std::string_view::npos) {
            std::string error;
            const auto st =
                host_.register_subscription({"discovered-1", "email", "wf-d", "{}"}, error);
            req.respond(200, {}, "register " + std::to_string(static_cast<int>(st)) + " " + error);
            return;
        }
        if (r.target.find("foreign") != std::string_view::npos) {
            wopbridge::inbound_event ev;
            ev.subscription_id = "someone-elses";
            ev.content_json = R"({"webhook":{}})";
            const auto st = host_.submit(ev, [](const wopbridge::submit_outcome&) {});
            req.respond(200, {}, "foreign " + std::to_string(static_cast<int>(st)));
            return;
        }
        if (r.target.find("services") != std::string_view::npos) {
            unsigned char bytes[8] = {0};
            const auto st = host_.random_bytes(bytes, sizeof bytes);
            req.respond(200, {},
                        "now " + std::to_string(host_.now_ms()) + " capacity " +
                            std::to_string(host_.has_capacity() ? 1 : 0) + " random " +
                            std::to_string(static_cast<int>(st)) + " " +
                            wopbridge::sig::to_hex(std::string_view(
                                reinterpret_cast<const char*>(bytes), sizeof bytes)));
            return;
        }
        if (r.target.find("badheader") != std::string_view::npos) {
            req.respond(200, {{"x-evil", "a\r\nset-cookie: x"}}, "nope");
            return;
        }
        if (settings.find("silent") != std::string_view::npos) {
            std::lock_guard lk(mu_);
            held_.push_back(std::move(req));
            return;
        }
        wopbridge::inbound_event ev;
        ev.subscription_id = std::string(r.subscription_id);
        const auto event_id = r.header("X-Event-Id");
        ev.provider_event_id = event_id ? std::string(*event_id)
                                        : wopbridge::sig::to_hex(wopbridge::sig::sha256(r.body));
        ev.received_at_ms = r.received_at_ms;
        ev.verified = true;
        ev.content_json = R"({"webhook":{"size":)" + std::to_string(r.body.size()) + "}}";
        auto shared = std::make_shared<wopbridge::request_handle>(std::move(req));
        const auto st = host_.submit(ev, [shared](const wopbridge::submit_outcome& o) {
            static constexpr const char* kinds[] = {"accepted", "duplicate", "held", "refused"};
            const std::string body = std::string(R"({"outcome":")") +
                                     kinds[static_cast<int>(o.kind)] + R"(","runId":")" + o.run_id +
                                     R"(","reason":")" + o.reason + R"("})";
            shared->respond(o.kind == wopbridge::outcome_kind::refused ? 503 : 200,
                            {{"content-type", "application/json"}}, body);
        });
        if (st != wopbridge::status::ok) {
            shared->respond(503, {}, "submit " + std::to_string(static_cast<int>(st)));
        }
    }

    wopbridge::status stop(std::int64_t deadline_ms) override {
        host_.log(wopbridge::log_level::info, "lifecycle stop");
        return wopbridge::status::ok;
    }

  private:
    wopbridge::host& host_;
    std::mutex mu_;
    std::map<std::string, std::string> subs_;
    std::vector<wopbridge::request_handle> held_;
};

} // namespace

WOPBRIDGE_CONNECTOR(good_echo)
