#include "contract/events.hpp"

#include <boost/json.hpp>

namespace wopbridge::events {
namespace json = boost::json;

std::string state_changed_payload(const state_change& c) {
    json::object o;
    o["subscriptionId"] = c.subscription_id;
    o["source"] = to_string(c.source);
    o["fromState"] = to_string(c.from);
    o["toState"] = to_string(c.to);
    if (c.reason != state_reason::none) {
        o["reason"] = to_string(c.reason);
    }
    return json::serialize(o);
}

std::string delivery_attempted_payload(const delivery_attempt& a) {
    json::object o;
    o["subscriptionId"] = a.subscription_id;
    o["dedupKey"] = a.dedup_key;
    o["attempt"] = a.attempt;
    o["outcome"] = to_string(a.outcome);
    if (a.outcome == attempt_outcome::delivered && !a.run_id.empty()) {
        o["runId"] = a.run_id;
    }
    return json::serialize(o);
}

std::string run_started_payload(const run_started_fields& f) {
    json::object o;
    o["workflowId"] = f.workflow_id;
    o["inputs"] = json::object();
    o["transport"] = "rest";
    o["owner"] = json::object{{"tenant", f.tenant}};
    o["metadata"] = json::object{{"subscriptionId", f.subscription_id}, {"deliveryId", f.delivery_id}};
    return json::serialize(o);
}

std::string run_completed_payload(std::string_view run_id, std::optional<int> exit_code) {
    json::object o;
    o["runId"] = run_id;
    if (exit_code) {
        o["exitCode"] = *exit_code;
    }
    return json::serialize(o);
}

std::string run_failed_payload(std::string_view run_id, std::string_view reason,
                               std::optional<int> exit_code) {
    json::object o;
    o["runId"] = run_id;
    o["reason"] = reason;
    if (exit_code) {
        o["exitCode"] = *exit_code;
    }
    return json::serialize(o);
}

result<std::string> trigger_event_json(const trigger_event_fields& f, std::string_view content_json) {
    boost::system::error_code ec;
    json::value content = json::parse(content_json, ec);
    if (ec || !content.is_object() || content.as_object().size() != 1 ||
        !content.as_object().begin()->value().is_object()) {
        return make_error_code(errc::invalid_argument);
    }
    json::object o;
    o["source"] = to_string(f.source);
    o["subscriptionId"] = f.subscription_id;
    o["deliveryId"] = f.delivery_id;
    o["receivedAt"] = format_iso8601(f.received_at);
    if (!f.dedup_key.empty()) {
        o["dedupKey"] = f.dedup_key;
    }
    o["verified"] = f.verified;
    o["contentTrust"] = "untrusted";
    auto& member = *content.as_object().begin();
    o[member.key()] = member.value();
    return json::serialize(o);
}

} // namespace wopbridge::events
