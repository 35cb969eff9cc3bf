#include "store/store.hpp"

#include <future>
#include <memory>

namespace wopbridge {

// Must not be called from an intake callback: that runs on the store's writer thread, which would
// then wait for itself.
result<intake_outcome> store::intake_sync(intake_request req) {
    auto promise = std::make_shared<std::promise<result<intake_outcome>>>();
    auto future = promise->get_future();
    intake(std::move(req),
           [promise](result<intake_outcome> r) { promise->set_value(std::move(r)); });
    return future.get();
}

} // namespace wopbridge
