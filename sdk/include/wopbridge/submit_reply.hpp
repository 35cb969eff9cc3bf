#pragma once
// From the host's submit outcome to an HTTP refusal (header-only, included by connector.hpp). The
// host names a refusal with a reason string (wb_submit_outcome.reason); this is the one place that
// reads those strings back, so HTTP connectors answer refusals from an enum and their own wording.

#include <string_view>

namespace wopbridge {

// Why the host refused a submit. `none` for a committed outcome.
enum class refusal_reason {
    none,
    subscription_not_active,
    not_found,
    invalid,
    signature_invalid,
    overloaded,
    store_unavailable,
    unknown,
};

inline refusal_reason refusal_reason_of(bool refused, std::string_view reason) noexcept {
    if (!refused) {
        return refusal_reason::none;
    }
    if (reason == "subscription_not_active") {
        return refusal_reason::subscription_not_active;
    }
    if (reason == "not_found") {
        return refusal_reason::not_found;
    }
    if (reason == "invalid") {
        return refusal_reason::invalid;
    }
    if (reason == "signature_invalid") {
        return refusal_reason::signature_invalid;
    }
    if (reason == "overloaded") {
        return refusal_reason::overloaded;
    }
    if (reason == "store_unavailable") {
        return refusal_reason::store_unavailable;
    }
    return refusal_reason::unknown;
}

// How one connector words its refusals. The statuses are shared: 409 not active, 404 not found,
// 400 invalid, 503 for everything else (the host may take it later).
struct refusal_wording {
    std::string_view not_active; // 409 "subscription_not_active"
    std::string_view not_found;  // 404 "not_found"
    std::string_view invalid;    // 400 with invalid_code; empty: answered like an overload
    std::string_view invalid_code = "invalid";
    std::string_view unavailable;        // 503 "overloaded" / "store_unavailable"
    bool store_has_own_code = true;      // false: store trouble is answered "overloaded" too
    int default_retry_after_seconds = 1; // when the host gave no hint
};

struct http_refusal {
    int status = 503;
    std::string_view code;
    std::string_view message;
    int retry_after_seconds = 0; // > 0 only for 503
};

inline http_refusal refusal_reply(refusal_reason reason, int retry_after_seconds,
                                  const refusal_wording& w) noexcept {
    switch (reason) {
    case refusal_reason::subscription_not_active:
        return {409, "subscription_not_active", w.not_active, 0};
    case refusal_reason::not_found:
        return {404, "not_found", w.not_found, 0};
    case refusal_reason::invalid:
        if (!w.invalid.empty()) {
            return {400, w.invalid_code, w.invalid, 0};
        }
        break;
    default:
        break;
    }
    const bool store = reason == refusal_reason::store_unavailable && w.store_has_own_code;
    return {503, store ? "store_unavailable" : "overloaded", w.unavailable,
            retry_after_seconds > 0 ? retry_after_seconds : w.default_retry_after_seconds};
}

} // namespace wopbridge
