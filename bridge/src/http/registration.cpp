#include "http/registration.hpp"
#include "contract/retry_schedule.hpp"

#include "contract/wire.hpp"
#include "plugins/secret_settings.hpp"
#include "schedule/cron.hpp"
#include "schedule/time_zone.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <limits>

#include <array>

namespace wopbridge::http {

namespace json = boost::json;

namespace {

using parse_result = std::variant<registration_request, registration_error>;

registration_error fail(std::string field, std::string message) {
    return registration_error{std::move(field), std::move(message)};
}

bool is_one_of(std::string_view key, std::initializer_list<std::string_view> keys) {
    for (auto k : keys) {
        if (k == key) {
            return true;
        }
    }
    return false;
}

} // namespace

parse_result parse_registration(std::string_view body, const std::string& tenant) {
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    if (ec || !v.is_object()) {
        return fail("body", "the body must be a JSON object");
    }
    const auto& o = v.as_object();
    for (const auto& kv : o) {
        if (!is_one_of(kv.key(), {"source", "workflowId", "dedupEnabled", "retryPolicy",
                                  "verification", "inputMapping", "schedule", "connector",
                                  "settings", "whenNotActive"})) {
            return fail(std::string(kv.key()), "unknown field");
        }
    }
    registration_request req;
    req.tenant = tenant;

    const auto* source = o.if_contains("source");
    if (!source) {
        return fail("source", "source is required");
    }
    if (!source->is_string()) {
        return fail("source", "source must be a string");
    }
    auto kind = wire::parse_source(source->as_string());
    if (!kind) {
        return fail("source", "unsupported source");
    }
    req.source = *kind;

    const auto* workflow = o.if_contains("workflowId");
    if (!workflow) {
        return fail("workflowId", "workflowId is required");
    }
    if (!workflow->is_string() || workflow->as_string().empty() ||
        workflow->as_string().size() > 256) {
        return fail("workflowId", "workflowId must be a non-empty string");
    }
    req.workflow_id = std::string(workflow->as_string());

    if (const auto* d = o.if_contains("dedupEnabled")) {
        if (!d->is_bool()) {
            return fail("dedupEnabled", "dedupEnabled must be a boolean");
        }
        req.dedup_enabled = d->as_bool();
    }

    if (const auto* w = o.if_contains("whenNotActive")) {
        if (!w->is_string() || (w->as_string() != "refuse" && w->as_string() != "hold")) {
            return fail("whenNotActive", "whenNotActive must be \"refuse\" or \"hold\"");
        }
        req.hold_when_not_active = w->as_string() == "hold";
    }

    if (const auto* rp = o.if_contains("retryPolicy")) {
        if (!rp->is_object()) {
            return fail("retryPolicy", "retryPolicy must be an object");
        }
        retry_policy policy;
        for (const auto& kv : rp->as_object()) {
            if (kv.key() == "maxAttempts") {
                const auto& m = kv.value();
                if (!m.is_int64() && !m.is_uint64()) {
                    return fail("retryPolicy.maxAttempts", "maxAttempts must be an integer");
                }
                constexpr auto top = std::numeric_limits<std::int64_t>::max();
                const auto n = m.is_int64() ? m.as_int64()
                               : m.as_uint64() > static_cast<std::uint64_t>(top)
                                   ? top
                                   : static_cast<std::int64_t>(m.as_uint64());
                if (auto why = max_attempts_refusal(n)) {
                    return fail("retryPolicy.maxAttempts", *why);
                }
                policy.max_attempts = static_cast<int>(n);
            } else if (kv.key() == "backoff") {
                auto b = kv.value().is_string() ? wire::parse_backoff(kv.value().as_string())
                                                : std::nullopt;
                if (!b) {
                    return fail("retryPolicy.backoff",
                                "backoff must be one of none, fixed, exponential");
                }
                policy.backoff = *b;
            } else {
                return fail("retryPolicy." + std::string(kv.key()), "unknown field");
            }
        }
        req.retry = policy;
    }

    if (const auto* ver = o.if_contains("verification")) {
        if (!ver->is_object()) {
            return fail("verification", "verification must be an object");
        }
        for (const auto& kv : ver->as_object()) {
            if (kv.key() != "mode") {
                return fail("verification." + std::string(kv.key()), "unknown field");
            }
            auto m = kv.value().is_string() ? wire::parse_verification(kv.value().as_string())
                                            : std::nullopt;
            if (!m) {
                return fail("verification.mode",
                            "mode must be one of required, best-effort, none");
            }
            req.verification = *m;
        }
    }

    if (const auto* im = o.if_contains("inputMapping")) {
        if (!im->is_object()) {
            return fail("inputMapping", "inputMapping must be an object");
        }
        // A non-normative host hint: accepted and not used by wopbridge.
    }

    if (const auto* sch = o.if_contains("schedule")) {
        if (req.source != source_kind::schedule) {
            return fail("schedule", "schedule is only valid with source \"schedule\"");
        }
        if (!sch->is_object()) {
            return fail("schedule", "schedule must be an object");
        }
        schedule_spec spec;
        for (const auto& kv : sch->as_object()) {
            if (kv.key() == "cron") {
                if (!kv.value().is_string() || kv.value().as_string().empty()) {
                    return fail("schedule.cron", "cron must be a non-empty string");
                }
                spec.cron = std::string(kv.value().as_string());
            } else if (kv.key() == "timeZone") {
                if (!kv.value().is_string()) {
                    return fail("schedule.timeZone", "timeZone must be a string");
                }
                spec.time_zone = std::string(kv.value().as_string());
            } else {
                return fail("schedule." + std::string(kv.key()), "unknown field");
            }
        }
        if (spec.cron.empty()) {
            return fail("schedule.cron", "cron is required");
        }
        // Checked here, not only by register_subscription (whose invalid_argument names no field),
        // so the answer says which of the two was wrong. The zone first: the expression is then
        // parsed in UTC, and its errors do not depend on the zone.
        if (!spec.time_zone.empty()) {
            std::string why;
            if (!time_zone::load(spec.time_zone, why)) {
                return fail("schedule.timeZone", why);
            }
        }
        if (auto parsed = cron_expr::parse(spec.cron); !parsed) {
            return fail("schedule.cron", parsed.error().message);
        }
        req.schedule = std::move(spec);
    } else if (req.source == source_kind::schedule) {
        return fail("schedule", "source \"schedule\" requires schedule {cron, timeZone?}");
    }

    if (const auto* c = o.if_contains("connector")) {
        if (!c->is_string() || c->as_string().empty()) {
            return fail("connector", "connector must be a non-empty string");
        }
        req.connector = std::string(c->as_string());
    }
    if (const auto* st = o.if_contains("settings")) {
        if (req.connector.empty()) {
            return fail("settings", "settings require connector");
        }
        if (!st->is_object()) {
            return fail("settings", "settings must be an object");
        }
        if (carries_sealed_key(*st)) {
            return fail("settings", "the key \"$sealed\" is reserved (secrets sealed at rest)");
        }
        req.connector_settings_json = json::serialize(*st);
    }
    if (req.connector.empty() && req.source != source_kind::webhook &&
        req.source != source_kind::schedule) {
        return fail("connector", "this source needs a connector instance to serve it");
    }
    return req;
}

} // namespace wopbridge::http
