#pragma once
// The values that go in and out of the bridge (app/bridge_api.hpp): requests, views, results.

#include "config/bridge_settings.hpp"
#include "contract/intake.hpp"
#include "contract/types.hpp"
#include "core/error.hpp"
#include "store/store.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge {

class secret_box;
namespace outbound {
class webhook_dispatcher;
}

// ---- inputs ----------------------------------------------------------------------------------------

struct registration_request {
    std::string tenant;
    source_kind source = source_kind::webhook;
    std::string workflow_id;
    bool dedup_enabled = true;
    std::optional<retry_policy> retry;
    verification_mode verification = verification_mode::required;
    std::optional<schedule_spec> schedule;   // source: schedule
    std::string connector;                   // optional: a loaded connector instance serves it
    std::string connector_settings_json = "{}";
    bool hold_when_not_active = false;       // whenNotActive: hold (default refuse = 409)
    // Called with the finished record (its settings in their stored, sealed form) before
    // anything is written; an error refuses the registration with nothing stored (a connector
    // module's own check of its settings: a refused value must not reach the store or its log).
    std::function<result<void>(const subscription&)> accept_before_write;
};

struct registration_result {
    subscription record;
    std::string ingest_url;       // absolute
    std::string signing_secret;   // "whsec_…", webhook source only; returned exactly once
};


// ---- outputs ---------------------------------------------------------------------------------------

struct subscription_view {
    subscription record;
    std::vector<delivery> recent_deliveries; // newest first, content-free
};

struct poll_result {
    std::vector<run_event> events;
    bool is_complete = false;
};

struct seam_deliver_request {
    std::string tenant;
    std::string scenario; // dedup | exhaust | deliver | refused
    std::string dedup_key;
    std::string source;   // default webhook
    std::string subscription_id; // deliver: on this existing subscription of the tenant
};

struct seam_deliver_result {
    std::string run_id;
    std::string subscription_id;
    std::string outcome;
    std::string subscription_state; // refused: the state after the refusal
    int delivered_count = 0;
};

// ---- operations: replay, housekeeping, metrics --------------------------------------------------------

struct replay_result {
    std::string delivery_id; // the new delivery (or the earlier replay's, when replayed before)
    std::string run_id;      // reserved for the run the replay starts
    bool held = false;       // the subscription is not active: committed held until it is resumed
    bool repeated = false;   // this dead letter was replayed before: the earlier replay's ids
};

struct replay_range {
    std::optional<millis> from; // dead_lettered_at >= from
    std::optional<millis> to;   // dead_lettered_at <= to
    bool all = false;           // every replayable dead letter (from/to ignored)
};

struct replay_job_status {
    std::string id;
    std::string subscription_id;
    std::string state = "running"; // running | completed | stopped (consecutive failures)
    int total = 0;                 // dead letters selected
    int replayed = 0;              // new deliveries committed
    int delivered = 0;             // of those, delivered so far
    int failed = 0;                // dead-lettered again, or could not be replayed
    millis started_at = 0;
    millis finished_at = 0;        // 0 while running
};

// A subscription with its delivery counts and newest delivery (the dashboard's list).
struct subscription_overview {
    subscription record;
    subscription_delivery_stats counts;     // zeros when the store cannot count
    std::optional<delivery> last_delivery;  // newest first
};

// GET /v1/runs (a wopbridge extension): filters, and the opaque cursor of the previous page.
struct run_list_request {
    std::string subscription_id;      // "" = any
    std::string workflow_id;          // "" = any
    std::optional<run_status> status;
    std::optional<millis> from;       // created at or after
    std::optional<millis> to;         // created at or before
    int limit = 50;                   // clamped to dead_letter_max_page_size
    std::string cursor;               // nextCursor of the previous page with the same filters
};

// A dead letter with the delivery its replay created, if it was replayed (the operator views).
struct dead_letter_view {
    dead_letter record;
    std::optional<delivery> replay;
};

} // namespace wopbridge
