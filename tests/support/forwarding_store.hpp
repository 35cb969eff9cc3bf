#pragma once
// A store that forwards every call to another one; tests derive from it to hold back or fail
// individual calls (e.g. keep intake callbacks pending, make record_attempt fail once).
#include "store/store_forwarder.hpp"

#include <memory>

namespace wopbridge::testing {

class forwarding_store : public store_forwarder {
public:
    using store_forwarder::store_forwarder;

    // The batch calls go one by one through record_attempt / delivery_content, so a test that
    // alters those alters the batches too.
    std::vector<result<void>> record_attempts(const std::vector<attempt_record>& recs) override {
        return delivery_queue::record_attempts(recs);
    }
    result<std::map<std::string, std::string>>
    delivery_contents(const std::vector<std::string>& ids) override {
        return delivery_queue::delivery_contents(ids);
    }
};

} // namespace wopbridge::testing
