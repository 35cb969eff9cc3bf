#pragma once
// What enters the bridge: a request as received, the submission a connector (or the webhook intake,
// or the scheduler) makes of it, and the answer. Value types only, on the contract floor, so the
// parts that produce them (intake/, schedule/, plugins/) need not include app/bridge.hpp.

#include "core/clock.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wopbridge {

// A request as received on POST /v1/ingest/{id}; header names are lower-case.
struct inbound_http_request {
    std::string method = "POST";
    std::string target;                                  // path + query as received
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::string remote_address;
    std::string public_base; // "https://host" the client called, said by a trusted proxy; "" = none
};

// What a connector (or the webhook intake) submits after verifying and parsing a request.
struct inbound_submission {
    std::string subscription_id;
    std::string provider_event_id;  // the provider's id for the event; the dedup key is derived from it
    std::string verbatim_dedup_key; // conformance seam only: used as the dedup key as given
    millis received_at = 0;
    bool verified = false;
    std::string content_json;       // {"webhook":{…}} / {"email":{…}} / {"form":{…}} …: the per-source object
};

enum class submit_status {
    accepted,          // committed; runId is reserved for the run this delivery starts
    duplicate,         // a repeat within retention: run_id is the prior one
    held,              // committed while the subscription is not active (whenNotActive: hold)
    not_active,        // 409 subscription_not_active
    signature_invalid, // 401; a verification refusal was dead-lettered
    not_found,         // no such subscription
    invalid,           // malformed submission
    overloaded,        // 503 + Retry-After
    unavailable,       // store cannot commit: 503 + Retry-After
};

// A provider's endpoint check answered as the provider expects (nothing stored, no run).
struct handshake_reply {
    int status = 200;
    std::string content_type;
    std::string body;
};

struct submit_result {
    submit_status status = submit_status::accepted;
    std::string run_id;
    std::string delivery_id;
    int retry_after_seconds = 0;
    std::string message; // content-free
    std::optional<handshake_reply> handshake;
};

using submit_callback = std::function<void(submit_result)>;

} // namespace wopbridge
