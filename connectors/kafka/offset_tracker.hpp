#pragma once
// The offsets of one partition between poll and commit. Records arrive in offset order; each is
// done when the bridge committed it (or recognised it). The committable offset is the first one
// not yet done (Kafka commits "the next offset to read"), so a later record done early never
// commits past an earlier one still outstanding. Offsets may have gaps (compaction, transaction
// markers): only offsets actually received count.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace wopbridge::kafka {

class offset_tracker {
  public:
    // A record polled at `offset`. Offsets at or below one already received are ignored (a
    // re-fetch after a seek or a rebalance); false then.
    bool received(std::int64_t offset) {
        if (last_ && offset <= *last_) {
            return false;
        }
        last_ = offset;
        pending_.emplace(offset, false);
        return true;
    }

    // The record at `offset` is committed in the bridge.
    void done(std::int64_t offset) {
        auto it = pending_.find(offset);
        if (it == pending_.end()) {
            return;
        }
        it->second = true;
        while (!pending_.empty() && pending_.begin()->second) {
            pending_.erase(pending_.begin());
        }
    }

    // The offset to commit: the first outstanding one, else one past the last received; nullopt
    // before anything was received.
    std::optional<std::int64_t> committable() const {
        if (!pending_.empty()) {
            return pending_.begin()->first;
        }
        if (last_) {
            return *last_ + 1;
        }
        return std::nullopt;
    }

    // Received and not done (including done ones waiting behind an earlier outstanding record).
    std::size_t outstanding() const noexcept { return pending_.size(); }

  private:
    std::map<std::int64_t, bool> pending_; // offset -> done
    std::optional<std::int64_t> last_;
};

} // namespace wopbridge::kafka
