#include "support/listener_module_test.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace wopbridge::testing {

subscription_spec queue_sub(std::string id, std::string settings_json) {
    subscription_spec sub;
    sub.id = std::move(id);
    sub.source = "queue";
    sub.settings_json = std::move(settings_json);
    return sub;
}

std::string settings_json(std::map<std::string, std::string> defaults,
                          const std::map<std::string, std::string>& extra) {
    for (const auto& [k, v] : extra) {
        defaults[k] = v;
    }
    std::string out = "{";
    for (const auto& [k, v] : defaults) {
        out += (out.size() > 1 ? ",\"" : "\"") + k + "\":" + v;
    }
    return out + "}";
}

std::map<std::string, int> submits_by_event(const connector_harness& harness,
                                            wb_submit_status outcome) {
    std::map<std::string, int> out;
    for (const auto& s : harness.submits()) {
        if (s.outcome == outcome) {
            ++out[s.provider_event_id];
        }
    }
    return out;
}

void expect_queue_listener_descriptor(const connector_harness& harness, const char* name,
                                      const char* status) {
    EXPECT_EQ(harness.descriptor_problem(), "");
    if (name != nullptr) {
        EXPECT_EQ(std::string(harness.descriptor().name), name);
    }
    EXPECT_EQ(std::string(harness.descriptor().source), "queue");
    if (status != nullptr) {
        EXPECT_EQ(std::string(harness.descriptor().status), status);
    }
    EXPECT_EQ(harness.descriptor().capabilities, WB_CAP_LISTENER);
    EXPECT_EQ(harness.descriptor().on_http_request, nullptr);
}

bool logged_line(const connector_harness& harness, const std::string& text) {
    const auto lines = harness.log_lines();
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

} // namespace wopbridge::testing
