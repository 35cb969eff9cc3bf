#include "app/file_housekeeping.hpp"

#include "core/blob_store.hpp"
#include "core/log.hpp"

#include <chrono>
#include <filesystem>
#include <memory>

namespace wopbridge {

void add_file_housekeeping(bridge& b, const std::string& attachment_dir,
                           const std::string& run_output_dir, millis retention_ms,
                           clock_source& clock) {
    // Files not put again for the retention are removed, plus a margin so a file a put refreshed
    // a moment ago is never the one removed.
    b.add_housekeeping_task([blobs = std::make_shared<blob_store>(attachment_dir, &clock),
                             keep = retention_ms](millis now) {
        constexpr millis margin = 3600 * 1000;
        if (auto n = blobs->purge_older_than(now - keep - margin); n && *n > 0) {
            log_line("info", "attachments.purged", {{"files", *n}});
        }
    });
    if (run_output_dir.empty()) {
        return;
    }
    // Run output logs follow the same retention (the last write's mtime counts).
    b.add_housekeeping_task([out_dir = run_output_dir, keep = retention_ms](millis) {
        std::error_code ec;
        const auto cutoff =
            std::filesystem::file_time_type::clock::now() - std::chrono::milliseconds(keep);
        int removed = 0;
        for (const auto& e : std::filesystem::directory_iterator(out_dir, ec)) {
            std::error_code fe;
            if (e.path().extension() == ".log" && e.is_regular_file(fe) &&
                e.last_write_time(fe) < cutoff && std::filesystem::remove(e.path(), fe)) {
                ++removed;
            }
        }
        if (removed > 0) {
            log_line("info", "run_output.purged", {{"files", removed}});
        }
    });
}

} // namespace wopbridge
