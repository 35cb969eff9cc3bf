#include "store/store.hpp"

#include <future>
#include <memory>

namespace wopbridge {

// Must not be called from an intake callback: that runs on the store's writer thread, which would
// then wait for itself.
result<intake_outcome> intake_store::intake_sync(intake_request req) {
    auto promise = std::make_shared<std::promise<result<intake_outcome>>>();
    auto future = promise->get_future();
    intake(std::move(req),
           [promise](result<intake_outcome> r) { promise->set_value(std::move(r)); });
    return future.get();
}

std::vector<result<void>> delivery_queue::record_attempts(const std::vector<attempt_record>& recs) {
    std::vector<result<void>> out;
    out.reserve(recs.size());
    for (const auto& rec : recs) {
        out.push_back(record_attempt(rec));
    }
    return out;
}

result<std::map<std::string, std::string>>
delivery_queue::delivery_contents(const std::vector<std::string>& delivery_ids) {
    std::map<std::string, std::string> out;
    for (const auto& id : delivery_ids) {
        auto content = delivery_content(id);
        if (content) {
            out.emplace(id, std::move(*content));
        } else if (content.error() != make_error_code(errc::not_found)) {
            return content.error();
        }
    }
    return out;
}

} // namespace wopbridge
