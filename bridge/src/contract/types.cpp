#include "contract/types.hpp"

namespace wopbridge {

std::string_view to_string(source_kind k) noexcept {
    switch (k) {
    case source_kind::webhook: return "webhook";
    case source_kind::schedule: return "schedule";
    case source_kind::queue: return "queue";
    case source_kind::email: return "email";
    case source_kind::form: return "form";
    }
    return "webhook";
}

std::string_view to_string(sub_state s) noexcept {
    switch (s) {
    case sub_state::active: return "active";
    case sub_state::paused: return "paused";
    case sub_state::failed: return "failed";
    case sub_state::dead_lettered: return "dead-lettered";
    }
    return "active";
}

std::string_view to_string(backoff_kind b) noexcept {
    switch (b) {
    case backoff_kind::none: return "none";
    case backoff_kind::fixed: return "fixed";
    case backoff_kind::exponential: return "exponential";
    }
    return "none";
}

std::string_view to_string(verification_mode m) noexcept {
    switch (m) {
    case verification_mode::required: return "required";
    case verification_mode::best_effort: return "best-effort";
    case verification_mode::none: return "none";
    }
    return "required";
}

std::string_view to_string(attempt_outcome o) noexcept {
    switch (o) {
    case attempt_outcome::delivered: return "delivered";
    case attempt_outcome::retrying: return "retrying";
    case attempt_outcome::dead_lettered: return "dead-lettered";
    }
    return "retrying";
}

std::string_view to_string(state_reason r) noexcept {
    switch (r) {
    case state_reason::none: return "";
    case state_reason::retry_exhausted: return "retry-exhausted";
    case state_reason::operator_paused: return "operator-paused";
    case state_reason::signature_invalid: return "signature-invalid";
    case state_reason::backpressure: return "backpressure";
    case state_reason::source_removed: return "source-removed";
    case state_reason::provenance_unevaluable: return "provenance-unevaluable";
    }
    return "";
}

std::string_view to_string(dead_letter_reason r) noexcept {
    switch (r) {
    case dead_letter_reason::verification_failed: return "verification_failed";
    case dead_letter_reason::retries_exhausted: return "retries_exhausted";
    }
    return "retries_exhausted";
}

std::string_view to_string(delivery_status s) noexcept {
    switch (s) {
    case delivery_status::pending: return "pending";
    case delivery_status::in_flight: return "in_flight";
    case delivery_status::delivered: return "delivered";
    case delivery_status::dead_lettered: return "dead_lettered";
    case delivery_status::held: return "held";
    }
    return "pending";
}

std::string_view to_string(run_status s) noexcept {
    switch (s) {
    case run_status::pending: return "pending";
    case run_status::running: return "running";
    case run_status::completed: return "completed";
    case run_status::failed: return "failed";
    }
    return "pending";
}

std::optional<source_kind> parse_source_kind(std::string_view s) noexcept {
    for (auto k : {source_kind::webhook, source_kind::schedule, source_kind::queue, source_kind::email,
                   source_kind::form}) {
        if (to_string(k) == s) {
            return k;
        }
    }
    return std::nullopt;
}

std::optional<sub_state> parse_sub_state(std::string_view s) noexcept {
    for (auto k : {sub_state::active, sub_state::paused, sub_state::failed, sub_state::dead_lettered}) {
        if (to_string(k) == s) {
            return k;
        }
    }
    return std::nullopt;
}

std::optional<backoff_kind> parse_backoff_kind(std::string_view s) noexcept {
    for (auto k : {backoff_kind::none, backoff_kind::fixed, backoff_kind::exponential}) {
        if (to_string(k) == s) {
            return k;
        }
    }
    return std::nullopt;
}

std::optional<verification_mode> parse_verification_mode(std::string_view s) noexcept {
    for (auto k : {verification_mode::required, verification_mode::best_effort, verification_mode::none}) {
        if (to_string(k) == s) {
            return k;
        }
    }
    return std::nullopt;
}

} // namespace wopbridge
