// Management bodies must be JSON: a body declared as another media type is refused 415 with the
// envelope before any handler parses it; JSON (+json, parameters, any case) and no declaration
// pass.
#include "http/api.hpp"
#include "http_fakes.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace wopbridge::http {
namespace {

using testing::fake_bridge;
using testing::manual_scheduler;
using testing::recording_sink;

class HttpMediaTypeTest : public ::testing::Test {
  protected:
    HttpMediaTypeTest() {
        api_options opts;
        opts.keys = {{"k", "acme", {"webhooks:manage", "runs:read", "runs:create"}}};
        api_ = std::make_unique<http_api>(opts, bridge_, nullptr, sched_);
    }

    int register_as(const std::string& content_type) {
        header_list h{{"authorization", "Bearer k"}};
        if (!content_type.empty()) {
            h.emplace_back("content-type", content_type);
        }
        bridge_.last_registration.reset();
        auto sink = std::make_shared<recording_sink>();
        api_->handle(http_request::make("POST", "/v1/trigger-subscriptions", h,
                                        R"({"source":"webhook","workflowId":"conformance-noop"})"),
                     sink);
        sched_.drain();
        EXPECT_TRUE(sink->response);
        if (sink->response->status == 415) {
            auto v = boost::json::parse(sink->response->body).as_object();
            EXPECT_EQ(v.at("error").as_string(), "unsupported_media_type");
            EXPECT_EQ(v.size(), 2u);
            EXPECT_FALSE(bridge_.last_registration.has_value());
        }
        return sink->response->status;
    }

    fake_bridge bridge_;
    manual_scheduler sched_;
    std::unique_ptr<http_api> api_;
};

TEST_F(HttpMediaTypeTest, RefusesBodiesDeclaredAsAnotherMediaType) {
    EXPECT_EQ(register_as("text/plain"), 415);
    EXPECT_EQ(register_as("application/x-www-form-urlencoded"), 415);
    EXPECT_EQ(register_as("multipart/form-data; boundary=x"), 415);
    EXPECT_EQ(register_as("application/jsonp"), 415);
    EXPECT_EQ(register_as("\xff\xfe"), 415);
}

TEST_F(HttpMediaTypeTest, AcceptsJsonAndAnUndeclaredBody) {
    EXPECT_EQ(register_as("application/json"), 201);
    EXPECT_EQ(register_as("Application/JSON; charset=utf-8"), 201);
    EXPECT_EQ(register_as("application/merge-patch+json"), 201);
    EXPECT_EQ(register_as(""), 201);
}

} // namespace
} // namespace wopbridge::http
