#include "support/bridge_reads.hpp"

#include "support/webhook_signer.hpp"

#include <boost/json.hpp>

#include <ctime>

namespace wopbridge::testing {
namespace {

std::string str(const boost::json::object& o, const char* key) {
    if (const auto* v = o.if_contains(key); v != nullptr && v->is_string()) {
        return std::string(v->as_string());
    }
    return {};
}

http_call authed_get(const std::string& url, const std::string& api_key) {
    http_call c;
    c.url = url;
    c.headers = {{"authorization", "Bearer " + api_key}};
    c.timeout_ms = 10000;
    return c;
}

} // namespace

std::vector<delivery_row> read_all_deliveries(const std::string& base_url,
                                              const std::string& api_key,
                                              const std::string& subscription_id, bool& ok) {
    ok = true;
    std::vector<delivery_row> out;
    std::string cursor;
    for (int pages = 0; pages < 100000; ++pages) {
        std::string url = base_url + "/v1/trigger-subscriptions/" + subscription_id +
                          "/deliveries?limit=100";
        if (!cursor.empty()) {
            url += "&cursor=" + cursor;
        }
        auto r = perform(authed_get(url, api_key));
        if (r.status != 200) {
            ok = false;
            return out;
        }
        boost::system::error_code ec;
        auto doc = boost::json::parse(r.body, ec);
        if (ec || !doc.is_object()) {
            ok = false;
            return out;
        }
        const auto& o = doc.as_object();
        if (const auto* items = o.if_contains("deliveries"); items && items->is_array()) {
            for (const auto& item : items->as_array()) {
                const auto& d = item.as_object();
                delivery_row row;
                row.delivery_id = str(d, "deliveryId");
                row.dedup_key = str(d, "dedupKey");
                row.status = str(d, "status");
                row.run_id = str(d, "runId");
                row.due_at = str(d, "dueAt");
                row.last_error = str(d, "lastError");
                if (const auto* a = d.if_contains("attempts"); a && a->is_int64()) {
                    row.attempts = static_cast<int>(a->as_int64());
                }
                out.push_back(std::move(row));
            }
        }
        cursor = str(o, "nextCursor");
        if (cursor.empty()) {
            return out;
        }
    }
    ok = false;
    return out;
}

run_read read_run(const std::string& base_url, const std::string& api_key,
                  const std::string& run_id) {
    auto r = perform(authed_get(base_url + "/v1/runs/" + run_id, api_key));
    run_read out;
    out.http_status = r.status;
    out.status = json_string_field(r.body, "status");
    out.upstream_run_id = json_string_field(r.body, "upstreamRunId");
    return out;
}

std::string read_subscription_state(const std::string& base_url, const std::string& api_key,
                                    const std::string& subscription_id) {
    auto r = perform(
        authed_get(base_url + "/v1/trigger-subscriptions/" + subscription_id, api_key));
    if (r.status != 200) {
        return {};
    }
    boost::system::error_code ec;
    auto doc = boost::json::parse(r.body, ec);
    if (ec || !doc.is_object()) {
        return {};
    }
    if (const auto* s = doc.as_object().if_contains("subscription"); s && s->is_object()) {
        return str(s->as_object(), "state");
    }
    return {};
}

http_call signed_ingest_call(const std::string& base_url, const std::string& subscription_id,
                             const std::string& secret, const std::string& webhook_id,
                             const std::string& body, long timeout_ms) {
    http_call c;
    c.method = "POST";
    c.url = base_url + "/v1/ingest/" + subscription_id;
    c.headers = standard_webhook_headers(secret, webhook_id, std::time(nullptr), body);
    c.headers.emplace_back("content-type", "application/json");
    c.body = body;
    c.timeout_ms = timeout_ms;
    return c;
}

std::string json_string_field(const std::string& body, const std::string& name) {
    boost::system::error_code ec;
    auto doc = boost::json::parse(body, ec);
    if (ec || !doc.is_object()) {
        return {};
    }
    return str(doc.as_object(), name.c_str());
}

} // namespace wopbridge::testing
