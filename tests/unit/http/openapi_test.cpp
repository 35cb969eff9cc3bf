#include "contract/retry_schedule.hpp"
#include "http/openapi_document.hpp"
#include "http/router.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

namespace wopbridge::http {
namespace {

namespace json = boost::json;

class OpenApiTest : public ::testing::Test {
protected:
    json::object doc_ = json::parse(openapi_document()).as_object();
};

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// The bounds the registration schema advertises for retryPolicy.maxAttempts are the ones the REST
// API and the config file enforce (contract/retry_schedule.hpp): one validator, not three.
TEST_F(OpenApiTest, RetryPolicyBoundsAreTheOnesTheValidatorsEnforce) {
    const auto& schemas = doc_.at("components").at("schemas").as_object();
    for (const char* name : {"TriggerSubscriptionRegistration", "TriggerSubscription"}) {
        const auto& max_attempts = schemas.at(name)
                                       .at("properties")
                                       .at("retryPolicy")
                                       .at("properties")
                                       .at("maxAttempts")
                                       .as_object();
        EXPECT_EQ(max_attempts.at("minimum").to_number<int>(), retry_max_attempts_min) << name;
        EXPECT_EQ(max_attempts.at("maximum").to_number<int>(), retry_max_attempts_max) << name;
    }
    EXPECT_FALSE(max_attempts_refusal(retry_max_attempts_min));
    EXPECT_FALSE(max_attempts_refusal(retry_max_attempts_max));
    EXPECT_EQ(max_attempts_refusal(retry_max_attempts_max + 1).value_or(""),
              "maxAttempts must be within 1..1000");
    EXPECT_TRUE(max_attempts_refusal(0));
}

TEST_F(OpenApiTest, IsAnOpenApi31Document) {
    EXPECT_EQ(doc_.at("openapi").as_string(), "3.1.0");
    EXPECT_TRUE(doc_.at("components").at("securitySchemes").as_object().contains("ApiKeyAuth"));
}

TEST_F(OpenApiTest, EveryRouteIsDocumentedAndEveryDocumentedOperationIsRouted) {
    std::set<std::pair<std::string, std::string>> routed;
    for (const auto& r : route_table()) {
        routed.emplace(std::string(r.pattern), lower(r.method));
    }
    std::set<std::pair<std::string, std::string>> documented;
    for (const auto& [path, item] : doc_.at("paths").as_object()) {
        for (const auto& [method, op] : item.as_object()) {
            if (method == "parameters") {
                continue;
            }
            documented.emplace(std::string(path), std::string(method));
        }
    }
    for (const auto& r : routed) {
        EXPECT_TRUE(documented.count(r)) << "undocumented route " << r.second << " " << r.first;
    }
    for (const auto& d : documented) {
        EXPECT_TRUE(routed.count(d)) << "documented but not routed " << d.second << " " << d.first;
    }
}

TEST_F(OpenApiTest, SecurityMatchesTheRouteTable) {
    for (const auto& r : route_table()) {
        const auto& op = doc_.at("paths").at(r.pattern).at(lower(r.method)).as_object();
        auto* sec = op.if_contains("security");
        bool open_op = sec && sec->as_array().empty();
        // Open and optional-key routes (the scrape) are documented as open.
        EXPECT_EQ(open_op, r.auth != route_auth::api_key) << r.method << " " << r.pattern;
    }
}

TEST_F(OpenApiTest, EmbeddedCopyMatchesSchemaFile) {
    std::ifstream in(std::string(WOPBRIDGE_SOURCE_DIR) + "/schemas/openapi.json",
                     std::ios::binary);
    ASSERT_TRUE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), std::string(openapi_document()))
        << "regenerate: cmake -DINPUT=schemas/openapi.json "
           "-DOUTPUT=bridge/src/http/openapi_document.cpp -P bridge/src/http/embed_openapi.cmake";
}

} // namespace
} // namespace wopbridge::http
