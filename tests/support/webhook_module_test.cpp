#include "support/webhook_module_test.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <string>

namespace wopbridge::testing {

void expect_webhook_ingest_descriptor(const connector_harness& harness, const char* name,
                                      std::string_view config_key,
                                      std::string_view subscription_key) {
    EXPECT_EQ(harness.descriptor_problem(), "");
    const auto& d = harness.descriptor();
    EXPECT_STREQ(d.name, name);
    EXPECT_STREQ(d.source, "webhook");
    EXPECT_EQ(d.capabilities, WB_CAP_HTTP_INGEST);
    EXPECT_NE(std::string(d.config_schema_json).find(config_key), std::string::npos);
    EXPECT_NE(std::string(d.subscription_schema_json).find(subscription_key), std::string::npos);
}

void expect_error_envelope(const module_reply& reply, int status, std::string_view code) {
    EXPECT_EQ(reply.status, status);
    EXPECT_EQ(reply.header("content-type"), "application/json");
    auto doc = boost::json::parse(reply.body);
    EXPECT_EQ(doc.at("error").as_string(), code);
}

} // namespace wopbridge::testing
