#pragma once
// The plain values of the C++ wrapper (connector.hpp): statuses, the module's info, what the host
// hands a connector (borrowed views) and what a connector hands the host (owned copies), plus the
// small wb_str helpers the wrapper's other headers share.

#include "wopbridge/connector.h"
#include "wopbridge/submit_reply.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge {

enum class status : int {
    ok = WB_OK,
    invalid = WB_ERR_INVALID,
    unsupported = WB_ERR_UNSUPPORTED,
    internal = WB_ERR_INTERNAL,
    busy = WB_ERR_BUSY,
    state = WB_ERR_STATE,
};

enum class log_level : int {
    debug = WB_LOG_DEBUG,
    info = WB_LOG_INFO,
    warn = WB_LOG_WARN,
    error = WB_LOG_ERROR,
};

// What `wopbridge connectors` shows and the descriptor carries. Read once, kept for the module's
// life.
struct connector_info {
    std::string name;               // e.g. "hello"
    std::string version = "0.0.0";  // the module's own version
    std::string status = "wip";     // "stable" | "alpha" | "wip"
    std::string security_posture;   // one line: what it verifies, what it trusts
    std::string source = "webhook"; // "webhook" "email" "form" "queue"
    std::string config_schema_json = "{\"type\":\"object\"}";
    std::string subscription_schema_json = "{\"type\":\"object\"}";
    std::uint64_t capabilities = WB_CAP_HTTP_INGEST;
};

namespace detail {

inline std::string_view view(wb_str s) noexcept {
    return s.data == nullptr ? std::string_view{} : std::string_view(s.data, s.size);
}

inline wb_str str(std::string_view s) noexcept {
    return wb_str{s.data(), s.size()};
}

// Copies a one-line message into a caller's buffer: truncated, NUL-terminated, newlines flattened.
inline void copy_error(std::string_view message, char* buf, std::size_t size) noexcept {
    if (buf == nullptr || size == 0) {
        return;
    }
    const std::size_t n = message.size() < size - 1 ? message.size() : size - 1;
    for (std::size_t i = 0; i < n; ++i) {
        const char c = message[i];
        buf[i] = (c == '\n' || c == '\r') ? ' ' : c;
    }
    buf[n] = '\0';
}

// Is function member `offset` (of size `size`) inside the table the host handed us?
inline bool api_has(const wb_host_api* api, std::size_t offset, std::size_t size) noexcept {
    return api != nullptr && api->struct_size >= offset + size;
}

#define WOPBRIDGE_API_HAS(api, member)                                                             \
    (::wopbridge::detail::api_has((api), offsetof(wb_host_api, member),                            \
                                  sizeof(((wb_host_api*)nullptr)->member)) &&                      \
     (api)->member != nullptr)

inline bool ascii_iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i];
        char y = b[i];
        if (x >= 'A' && x <= 'Z') {
            x = static_cast<char>(x - 'A' + 'a');
        }
        if (y >= 'A' && y <= 'Z') {
            y = static_cast<char>(y - 'A' + 'a');
        }
        if (x != y) {
            return false;
        }
    }
    return true;
}

} // namespace detail

// ---- values handed to the connector (borrowed: valid only during the call) ----------------------

struct header_view {
    std::string_view name; // lower-case as delivered by the host
    std::string_view value;
};

struct http_request_view {
    std::string_view subscription_id;
    std::string_view method;
    std::string_view target;     // path + query as received
    std::string_view public_url; // the URL the provider signed (server.publicUrl + target)
    std::vector<header_view> headers;
    std::string_view body; // raw bytes: verify signatures on these
    std::string_view remote_address;
    std::int64_t received_at_ms = 0;

    // First header with this name, compared case-insensitively.
    std::optional<std::string_view> header(std::string_view name) const noexcept {
        for (const auto& h : headers) {
            if (detail::ascii_iequals(h.name, name)) {
                return h.value;
            }
        }
        return std::nullopt;
    }
};

struct subscription_info {
    std::string_view id;
    std::string_view source;
    std::string_view workflow_id;
    std::string_view settings_json;
    std::string_view ingest_url;
};

// ---- values the connector hands to the host (copied by the host) --------------------------------

struct inbound_event {
    std::string subscription_id;
    std::string provider_event_id; // the provider's stable id; a content hash when it has none
    std::int64_t received_at_ms = 0;
    bool verified = false;
    std::string content_json; // {"<source>":{...}}
};

enum class outcome_kind : int {
    accepted = WB_SUBMIT_ACCEPTED,
    duplicate = WB_SUBMIT_DUPLICATE,
    held = WB_SUBMIT_HELD,
    refused = WB_SUBMIT_REFUSED,
};

struct submit_outcome {
    outcome_kind kind = outcome_kind::refused;
    std::string run_id;
    std::string delivery_id;
    std::string reason;
    int retry_after_seconds = 0;
};

struct subscription_request {
    std::string id;
    std::string source;
    std::string workflow_id;
    std::string settings_json = "{}";
};

using header_list = std::vector<std::pair<std::string, std::string>>;

// The refusal helpers of submit_reply.hpp, read from an outcome.
inline refusal_reason refusal_reason_of(const submit_outcome& o) noexcept {
    return refusal_reason_of(o.kind == outcome_kind::refused, o.reason);
}
inline http_refusal refusal_reply(const submit_outcome& o, const refusal_wording& w) noexcept {
    return refusal_reply(refusal_reason_of(o), o.retry_after_seconds, w);
}

} // namespace wopbridge
