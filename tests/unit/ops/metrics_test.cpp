#include "core/metrics.hpp"

#include <gtest/gtest.h>

namespace wopbridge {
namespace {

class MetricsTest : public ::testing::Test {
protected:
    metrics_registry reg_;
};

TEST_F(MetricsTest, CountersRenderWithDeclaredLabelsInOrder) {
    reg_.declare("x_total", metric_kind::counter, "X.", {"a", "b"});
    reg_.increment("x_total", {{"b", "2"}, {"a", "1"}});
    reg_.increment("x_total", {{"a", "1"}, {"b", "2"}}, 2);
    auto text = reg_.exposition();
    EXPECT_NE(text.find("# TYPE x_total counter\n"), std::string::npos);
    EXPECT_NE(text.find("x_total{a=\"1\",b=\"2\"} 3\n"), std::string::npos) << text;
}

TEST_F(MetricsTest, UndeclaredLabelsAreDropped) {
    reg_.declare("x_total", metric_kind::counter, "X.", {"a"});
    reg_.increment("x_total", {{"body", "secret"}});
    EXPECT_EQ(reg_.exposition().find("secret"), std::string::npos);
    EXPECT_EQ(reg_.value("x_total", {{"body", "secret"}}), 0);
}

TEST_F(MetricsTest, HistogramBucketsAreCumulative) {
    reg_.declare("lat_seconds", metric_kind::histogram, "L.", {}, {0.1, 1});
    reg_.observe("lat_seconds", {}, 0.05);
    reg_.observe("lat_seconds", {}, 0.5);
    reg_.observe("lat_seconds", {}, 5);
    auto text = reg_.exposition();
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.10000000000000001\"} 1\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_count 3\n"), std::string::npos);
}

TEST_F(MetricsTest, GaugesSetAndClear) {
    reg_.declare("g", metric_kind::gauge, "G.", {"state"});
    reg_.set("g", {{"state", "active"}}, 4);
    EXPECT_EQ(reg_.value("g", {{"state", "active"}}), 4);
    reg_.clear("g");
    EXPECT_EQ(reg_.value("g", {{"state", "active"}}), 0);
}

} // namespace
} // namespace wopbridge
