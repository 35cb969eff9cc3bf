#pragma once
// The node's files that housekeeping purges beside the store's rows: attachments and the local
// ledger's run output logs, both kept for attachments.retention.

#include "app/bridge.hpp"
#include "core/clock.hpp"

#include <string>

namespace wopbridge {

// Adds the purge tasks to `b`'s housekeeping (run on its timer). An empty `run_output_dir`: runs
// are not local, nothing to purge there.
void add_file_housekeeping(bridge& b, const std::string& attachment_dir,
                           const std::string& run_output_dir, millis retention_ms,
                           clock_source& clock);

} // namespace wopbridge
