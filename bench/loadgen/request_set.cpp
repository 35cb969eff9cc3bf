#include "request_set.hpp"

#include <wopbridge/signatures.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace wopbridge::bench {

namespace {

std::int64_t unix_now_s() {
    using namespace std::chrono;
    return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

std::string id_for(const std::string& prefix, std::uint64_t n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%010llu", static_cast<unsigned long long>(n));
    return prefix + buf;
}

// A realistic small event: ~250 bytes like a typical partner webhook.
std::string webhook_body(const std::string& id) {
    return R"({"type":"ticket.created","id":")" + id +
           R"(","data":{"ticket":{"id":4242,"priority":"high","subject":"printer on fire",)"
           R"("requester":"ops@example.com","tags":["hardware","urgent"]}}})";
}

std::string slack_body(const std::string& id) {
    return R"({"token":"x","team_id":"T0001","api_app_id":"A0001","type":"event_callback",)"
           R"("event_id":")" + id + R"(","event_time":1700000000,)"
           R"("event":{"type":"app_mention","user":"U0001","text":"<@U0BOT> printer on fire",)"
           R"("channel":"C0001","ts":"1700000000.000100"}})";
}

} // namespace

target parse_url(const std::string& url) {
    target t;
    const std::string scheme = "http://";
    if (url.rfind(scheme, 0) != 0) {
        return t;
    }
    std::string rest = url.substr(scheme.size());
    auto slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    t.path = slash == std::string::npos ? "/" : rest.substr(slash);
    t.host_header = authority;
    std::string host = authority;
    if (!authority.empty() && authority[0] == '[') { // [v6]:port
        auto close = authority.find(']');
        if (close == std::string::npos) {
            return t;
        }
        host = authority.substr(1, close - 1);
        if (close + 1 < authority.size() && authority[close + 1] == ':') {
            t.port = static_cast<std::uint16_t>(std::atoi(authority.c_str() + close + 2));
        }
    } else if (auto colon = authority.rfind(':'); colon != std::string::npos) {
        host = authority.substr(0, colon);
        t.port = static_cast<std::uint16_t>(std::atoi(authority.c_str() + colon + 1));
    }
    t.host = host;
    return t;
}

std::string sign_standard_webhook(const std::string& secret, const std::string& id, std::int64_t ts,
                                  const std::string& body) {
    return sig::sign_standard_webhooks(secret, id, ts, body).value_or("");
}

std::string sign_slack(const std::string& secret, const std::string& ts, const std::string& body) {
    return sig::sign_slack_v0(secret, ts, body);
}

void request_set::build(const request_set_options& opts, std::size_t n) {
    std::mt19937_64 rng(opts.seed);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    const std::int64_t ts = unix_now_s();
    const std::string ts_text = std::to_string(ts);
    const std::string head = "POST " + opts.to.path + " HTTP/1.1\r\nHost: " + opts.to.host_header +
                             "\r\nContent-Type: application/json\r\n";
    std::vector<std::size_t> originals; // indices of first-time requests (duplicate sources)
    requests_.reserve(requests_.size() + n);
    std::string body;
    for (std::size_t i = 0; i < n; ++i) {
        prepared_request r;
        std::string id;
        if (opts.reuse_existing > 0) {
            std::uniform_int_distribution<std::uint64_t> pick(0, opts.reuse_existing - 1);
            id = id_for(opts.existing_prefix, pick(rng));
            r.duplicate = true;
        } else if (!originals.empty() && coin(rng) < opts.duplicate_ratio) {
            // Repeat a recent original with identical bytes: what a provider retry looks like.
            std::size_t back = std::min<std::size_t>(originals.size(), 1000);
            std::uniform_int_distribution<std::size_t> pick(originals.size() - back,
                                                            originals.size() - 1);
            r.wire = requests_[originals[pick(rng)]].wire;
            r.duplicate = true;
            requests_.push_back(std::move(r));
            continue;
        } else {
            id = id_for(opts.id_prefix, next_id_++);
        }
        r.wire.reserve(head.size() + 420);
        r.wire = head;
        if (opts.kind == request_kind::standard_webhook) {
            body = webhook_body(id);
            r.wire += "webhook-id: " + id + "\r\nwebhook-timestamp: " + ts_text +
                      "\r\nwebhook-signature: " + sign_standard_webhook(opts.secret, id, ts, body) +
                      "\r\n";
        } else {
            body = slack_body(id);
            r.wire += "X-Slack-Request-Timestamp: " + ts_text +
                      "\r\nX-Slack-Signature: " + sign_slack(opts.secret, ts_text, body) + "\r\n";
        }
        r.wire += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
        r.wire += body;
        if (!r.duplicate) {
            originals.push_back(requests_.size());
        }
        requests_.push_back(std::move(r));
    }
}

} // namespace wopbridge::bench
