#include "request_set.hpp"

#include <wopbridge/signatures.hpp>

#include <curl/curl.h>

#include <chrono>
#include <cstdio>

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

std::string sign_standard_webhook(const std::string& secret, const std::string& id, std::int64_t ts,
                                  const std::string& body) {
    return sig::sign_standard_webhooks(secret, id, ts, body).value_or("");
}

std::string sign_slack(const std::string& secret, const std::string& ts, const std::string& body) {
    return sig::sign_slack_v0(secret, ts, body);
}

request_set::~request_set() {
    for (auto& r : requests_) {
        curl_slist_free_all(r.headers);
    }
}

void request_set::build(const request_set_options& opts, std::size_t n) {
    std::mt19937_64 rng(opts.seed);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    const std::int64_t ts = unix_now_s();
    const std::string ts_text = std::to_string(ts);
    std::vector<std::size_t> originals; // indices of first-time requests (duplicate sources)
    requests_.reserve(requests_.size() + n);
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
            const auto& src = requests_[originals[pick(rng)]];
            r.body = src.body;
            for (auto* h = src.headers; h; h = h->next) {
                r.headers = curl_slist_append(r.headers, h->data);
            }
            r.duplicate = true;
            requests_.push_back(std::move(r));
            continue;
        } else {
            id = id_for(opts.id_prefix, next_id_++);
        }
        if (opts.kind == request_kind::standard_webhook) {
            r.body = webhook_body(id);
            r.headers = curl_slist_append(r.headers, ("webhook-id: " + id).c_str());
            r.headers = curl_slist_append(r.headers, ("webhook-timestamp: " + ts_text).c_str());
            r.headers = curl_slist_append(
                r.headers,
                ("webhook-signature: " + sign_standard_webhook(opts.secret, id, ts, r.body)).c_str());
        } else {
            r.body = slack_body(id);
            r.headers = curl_slist_append(r.headers, ("X-Slack-Request-Timestamp: " + ts_text).c_str());
            r.headers = curl_slist_append(
                r.headers, ("X-Slack-Signature: " + sign_slack(opts.secret, ts_text, r.body)).c_str());
        }
        r.headers = curl_slist_append(r.headers, "Content-Type: application/json");
        r.headers = curl_slist_append(r.headers, "Expect:");
        if (!r.duplicate) {
            originals.push_back(requests_.size());
        }
        requests_.push_back(std::move(r));
    }
}

} // namespace wopbridge::bench
