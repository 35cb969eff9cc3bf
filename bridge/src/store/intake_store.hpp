#pragma once
// The store's role for accepting inbound requests (see store.hpp for the transaction and threading
// rules).

#include "contract/types.hpp"
#include "core/error.hpp"

#include <functional>
#include <string>

namespace wopbridge {

struct intake_request {
    std::string subscription_id;
    std::string tenant;
    std::string dedup_key;        // host-opaque (or the seam's verbatim key); never inbound content
    bool dedup_enabled = true;
    std::string delivery_id;      // minted by the caller
    std::string run_id;           // reserved by the caller for the run this delivery starts
    millis received_at = 0;
    millis due_at = 0;
    bool hold = false;            // accept but do not deliver until the subscription is active again
    std::string content_json;     // the TriggerEvent JSON handed to the run; stored, never event-logged
    millis dedup_expires_at = 0;  // received_at + dedup retention
};

enum class intake_status { accepted, duplicate, held };

struct intake_outcome {
    intake_status status = intake_status::accepted;
    std::string delivery_id; // the new one, or the original one for a duplicate
    std::string run_id;      // the reserved run id (of the original delivery for a duplicate)
};

using intake_callback = std::function<void(result<intake_outcome>)>;

// A dead letter written for a refused (unverified) inbound request: no delivery, no state change.
struct verification_refusal {
    std::string subscription_id;
    std::string dedup_key;
    std::string attempt_event_id;
    millis at = 0;
    millis expires_at = 0;
};

class intake_store {
public:
    virtual ~intake_store() = default;

    // Intake: inserts the dedup row (a uniqueness constraint on (subscription_id, dedup_key)) and the
    // delivery row in one transaction. A repeat key within retention answers `duplicate` with the
    // original delivery's ids. Writes from many threads are grouped into one commit (one fsync).
    // The callback runs on a store thread after the commit; it must not block.
    virtual void intake(intake_request req, intake_callback done) = 0;
    // Synchronous convenience wrapper around intake().
    result<intake_outcome> intake_sync(intake_request req);

    virtual result<void> record_verification_refusal(const verification_refusal& r) = 0;
};

} // namespace wopbridge
