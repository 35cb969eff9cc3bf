#include "store/store_codec.hpp"
#include "store/store_rows.hpp"

#include <boost/json.hpp>

#include <array>
#include <utility>

namespace wopbridge::store_codec {
namespace {

template <class Enum, std::size_t N>
using name_table = std::array<std::pair<Enum, std::string_view>, N>;

template <class Enum, std::size_t N>
std::string_view lookup(const name_table<Enum, N>& table, Enum e) noexcept {
    for (const auto& [value, name] : table) {
        if (value == e) {
            return name;
        }
    }
    return {};
}

template <class Enum, std::size_t N>
std::optional<Enum> reverse(const name_table<Enum, N>& table, std::string_view text) noexcept {
    for (const auto& [value, name] : table) {
        if (name == text) {
            return value;
        }
    }
    return std::nullopt;
}

constexpr name_table<source_kind, 5> source_names{{{source_kind::webhook, "webhook"},
                                                   {source_kind::schedule, "schedule"},
                                                   {source_kind::queue, "queue"},
                                                   {source_kind::email, "email"},
                                                   {source_kind::form, "form"}}};
constexpr name_table<sub_state, 4> state_names{{{sub_state::active, "active"},
                                                {sub_state::paused, "paused"},
                                                {sub_state::failed, "failed"},
                                                {sub_state::dead_lettered, "dead-lettered"}}};
constexpr name_table<backoff_kind, 3> backoff_names{{{backoff_kind::none, "none"},
                                                     {backoff_kind::fixed, "fixed"},
                                                     {backoff_kind::exponential, "exponential"}}};
constexpr name_table<verification_mode, 3> verification_names{
    {{verification_mode::required, "required"},
     {verification_mode::best_effort, "best-effort"},
     {verification_mode::none, "none"}}};
constexpr name_table<attempt_outcome, 3> outcome_names{
    {{attempt_outcome::delivered, "delivered"},
     {attempt_outcome::retrying, "retrying"},
     {attempt_outcome::dead_lettered, "dead-lettered"}}};
constexpr name_table<state_reason, 7> reason_names{
    {{state_reason::none, ""},
     {state_reason::retry_exhausted, "retry-exhausted"},
     {state_reason::operator_paused, "operator-paused"},
     {state_reason::signature_invalid, "signature-invalid"},
     {state_reason::backpressure, "backpressure"},
     {state_reason::source_removed, "source-removed"},
     {state_reason::provenance_unevaluable, "provenance-unevaluable"}}};
constexpr name_table<dead_letter_reason, 2> dead_letter_reason_names{
    {{dead_letter_reason::verification_failed, "verification_failed"},
     {dead_letter_reason::retries_exhausted, "retries_exhausted"}}};
constexpr name_table<delivery_status, 5> delivery_status_names{
    {{delivery_status::pending, "pending"},
     {delivery_status::in_flight, "in_flight"},
     {delivery_status::delivered, "delivered"},
     {delivery_status::dead_lettered, "dead_lettered"},
     {delivery_status::held, "held"}}};
constexpr name_table<run_status, 4> run_status_names{{{run_status::pending, "pending"},
                                                      {run_status::running, "running"},
                                                      {run_status::completed, "completed"},
                                                      {run_status::failed, "failed"}}};
constexpr name_table<subscription::origin_kind, 3> origin_names{
    {{subscription::origin_kind::config, "config"},
     {subscription::origin_kind::api, "api"},
     {subscription::origin_kind::seam, "seam"}}};

constexpr std::string_view b64url_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url_encode(std::string_view in) {
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : in) {
        acc = (acc << 8) | c;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out.push_back(b64url_alphabet[(acc >> bits) & 0x3f]);
        }
    }
    if (bits > 0) {
        out.push_back(b64url_alphabet[(acc << (6 - bits)) & 0x3f]);
    }
    return out;
}

std::optional<std::string> base64url_decode(std::string_view in) {
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : in) {
        auto pos = b64url_alphabet.find(c);
        if (pos == std::string_view::npos) {
            return std::nullopt;
        }
        acc = (acc << 6) | static_cast<std::uint32_t>(pos);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    return out;
}

} // namespace

// Each enum's two directions over its one table.
#define WB_STORED_SPELLINGS(Enum, table, parse)                                                    \
    std::string_view name_of(Enum e) noexcept {                                                    \
        return lookup(table, e);                                                                   \
    }                                                                                              \
    std::optional<Enum> parse(std::string_view s) noexcept {                                       \
        return reverse(table, s);                                                                  \
    }

WB_STORED_SPELLINGS(source_kind, source_names, source_from)
WB_STORED_SPELLINGS(sub_state, state_names, state_from)
WB_STORED_SPELLINGS(backoff_kind, backoff_names, backoff_from)
WB_STORED_SPELLINGS(verification_mode, verification_names, verification_from)
WB_STORED_SPELLINGS(attempt_outcome, outcome_names, outcome_from)
WB_STORED_SPELLINGS(state_reason, reason_names, reason_from)
WB_STORED_SPELLINGS(dead_letter_reason, dead_letter_reason_names, dead_letter_reason_from)
WB_STORED_SPELLINGS(delivery_status, delivery_status_names, delivery_status_from)
WB_STORED_SPELLINGS(run_status, run_status_names, run_status_from)
WB_STORED_SPELLINGS(subscription::origin_kind, origin_names, origin_from)

#undef WB_STORED_SPELLINGS

std::string attempt_payload_json(const delivery_attempt& a) {
    boost::json::object o;
    o["subscriptionId"] = a.subscription_id;
    o["dedupKey"] = a.dedup_key;
    o["attempt"] = a.attempt;
    o["outcome"] = name_of(a.outcome);
    if (a.outcome == attempt_outcome::delivered && !a.run_id.empty()) {
        o["runId"] = a.run_id;
    }
    return boost::json::serialize(o);
}

std::string state_change_payload_json(const state_change& c) {
    boost::json::object o;
    o["subscriptionId"] = c.subscription_id;
    o["source"] = name_of(c.source);
    o["fromState"] = name_of(c.from);
    o["toState"] = name_of(c.to);
    if (c.reason != state_reason::none) {
        o["reason"] = name_of(c.reason);
    }
    return boost::json::serialize(o);
}

std::string replay_of_dedup_key(std::string_view dedup_key) {
    constexpr std::string_view prefix = "replay:";
    if (dedup_key.size() > prefix.size() && dedup_key.substr(0, prefix.size()) == prefix) {
        return std::string(dedup_key.substr(prefix.size()));
    }
    return {};
}

std::string json_string_array(const std::vector<std::string>& items) {
    boost::json::array a;
    for (const auto& s : items) {
        a.emplace_back(s);
    }
    return boost::json::serialize(a);
}

std::vector<std::string> string_array_from_json(const std::string& text) {
    std::vector<std::string> out;
    boost::system::error_code ec;
    auto v = boost::json::parse(text, ec);
    if (!ec && v.is_array()) {
        for (const auto& e : v.as_array()) {
            if (e.is_string()) {
                out.emplace_back(e.as_string());
            }
        }
    }
    return out;
}

sub_state outbound_state_from(std::string_view text) noexcept {
    return parse_sub_state(text).value_or(sub_state::failed);
}

std::string encode_cursor(std::string_view collection, std::string_view subscription_id,
                          std::int64_t key) {
    boost::json::object o;
    o["c"] = collection;
    o["s"] = subscription_id;
    o["k"] = key;
    return base64url_encode(boost::json::serialize(o));
}

std::optional<std::int64_t> decode_cursor(std::string_view cursor, std::string_view collection,
                                          std::string_view subscription_id) {
    if (cursor.size() > 4096) {
        return std::nullopt;
    }
    auto text = base64url_decode(cursor);
    if (!text) {
        return std::nullopt;
    }
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(*text, ec);
    if (ec || !v.is_object()) {
        return std::nullopt;
    }
    const auto& o = v.get_object();
    const auto* c = o.if_contains("c");
    const auto* s = o.if_contains("s");
    const auto* k = o.if_contains("k");
    if (c == nullptr || s == nullptr || k == nullptr || !c->is_string() || !s->is_string() ||
        !k->is_int64()) {
        return std::nullopt;
    }
    if (c->get_string() != collection || s->get_string() != subscription_id) {
        return std::nullopt;
    }
    return k->get_int64();
}

} // namespace wopbridge::store_codec
