// The plugin host with real test modules and a recording sink: lifecycle order, idempotent
// subscribe, respond only after the commit, duplicates, contained exceptions, and the host's 503
// for a connector that never answers.
#include "plugins/connector_host.hpp"
#include "support/build_paths.hpp"
#include "support/fake_clock.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <mutex>

namespace wopbridge {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr auto wait_limit = 5s;

class recording_sink final : public submit_sink {
  public:
    // A submission the test never commits stays unanswered for the process's life: answering it
    // would run code of an instance the host may have abandoned. Kept reachable, not dropped.
    ~recording_sink() override {
        static auto* const never_answered = new std::vector<submit_callback>();
        std::lock_guard lk(mu_);
        for (auto& cb : callbacks_) {
            never_answered->push_back(std::move(cb));
        }
    }

    void submit(const inbound_submission& s, submit_callback done) override {
        std::lock_guard lk(mu_);
        submissions_.push_back(s);
        callbacks_.push_back(std::move(done));
        cv_.notify_all();
    }
    bool has_capacity() const override { return capacity_.load(); }
    std::atomic<bool> capacity_{true};

    bool wait_for(std::size_t n) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, wait_limit, [&] { return submissions_.size() >= n; });
    }
    std::size_t size() {
        std::lock_guard lk(mu_);
        return submissions_.size();
    }
    inbound_submission at(std::size_t i) {
        std::lock_guard lk(mu_);
        return submissions_.at(i);
    }
    // The durable commit (or refusal) of submission i.
    void commit(std::size_t i, submit_result r) {
        submit_callback cb;
        {
            std::lock_guard lk(mu_);
            cb = callbacks_.at(i);
        }
        cb(std::move(r));
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<inbound_submission> submissions_;
    std::vector<submit_callback> callbacks_;
};

// Collects replies and log lines; waits on conditions with a bounded deadline.
class collector {
  public:
    ingest_reply_callback reply_to() {
        return [this](ingest_reply r) {
            std::lock_guard lk(mu_);
            replies_.push_back(std::move(r));
            cv_.notify_all();
        };
    }
    void log(const std::string& line) {
        std::lock_guard lk(mu_);
        lines_.push_back(line);
        cv_.notify_all();
    }
    bool wait_replies(std::size_t n) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, wait_limit, [&] { return replies_.size() >= n; });
    }
    bool wait_log(const std::string& msg) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, wait_limit, [&] {
            for (const auto& m : messages_locked()) {
                if (m == msg) {
                    return true;
                }
            }
            return false;
        });
    }
    std::vector<ingest_reply> replies() {
        std::lock_guard lk(mu_);
        return replies_;
    }
    std::vector<std::string> messages() {
        std::lock_guard lk(mu_);
        return messages_locked();
    }
    // The "lifecycle ..." messages the good_echo module logs, prefix dropped.
    std::vector<std::string> lifecycle() {
        std::vector<std::string> out;
        for (const auto& m : messages()) {
            if (m.rfind("lifecycle ", 0) == 0) {
                out.push_back(m.substr(10));
            }
        }
        return out;
    }

  private:
    std::vector<std::string> messages_locked() {
        std::vector<std::string> out;
        for (const auto& l : lines_) {
            const auto v = boost::json::parse(l).as_object();
            out.emplace_back(v.at("msg").as_string());
        }
        return out;
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<ingest_reply> replies_;
    std::vector<std::string> lines_;
};

class ConnectorHostTest : public ::testing::Test {
  protected:
    ConnectorHostTest() {
        options_.module_dirs = {WOPBRIDGE_TEST_MODULE_DIR};
        options_.public_url = "https://bridge.example/";
        options_.respond_timeout_ms = 1000;
        options_.stop_timeout_ms = 2000;
        options_.log_sink = [this](const std::string& l) { out_.log(l); };
        host_ = std::make_unique<connector_host>(options_, sink_, clock_, random_);
    }

    static subscription sub(const std::string& id, const std::string& connector = "echo",
                            const std::string& settings = "{}") {
        subscription s;
        s.id = id;
        s.connector = connector;
        s.workflow_id = "wf-1";
        s.source = source_kind::webhook;
        s.connector_settings_json = settings;
        return s;
    }

    static inbound_http_request request(const std::string& target,
                                        const std::string& event_id = "evt-1") {
        inbound_http_request r;
        r.target = target;
        r.headers = {{"Content-Type", "application/json"}, {"X-Event-Id", event_id}};
        r.body = R"({"hello":"world"})";
        r.remote_address = "127.0.0.1";
        return r;
    }

    void add_echo(const std::string& settings = "{}") {
        auto r = host_->add_instance({"echo", "good_echo", settings});
        ASSERT_TRUE(r) << r.error().message;
    }

    connector_host_options options_;
    recording_sink sink_;
    testing::fake_clock clock_;
    testing::seeded_random random_;
    collector out_;
    std::unique_ptr<connector_host> host_;
};

TEST_F(ConnectorHostTest, DrivesTheLifecycleInOrder) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    ASSERT_TRUE(host_->unsubscribe("echo", "sub-1"));
    ASSERT_TRUE(host_->remove_instance("echo"));
    EXPECT_THAT(out_.lifecycle(),
                ElementsAre("create", "start",
                            "subscribe sub-1 https://bridge.example/v1/ingest/sub-1",
                            "unsubscribe sub-1", "stop", "destroy"));
}

TEST_F(ConnectorHostTest, SubscribeIsIdempotent) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    ASSERT_TRUE(
        host_->subscribe(sub("sub-1", "echo", R"({"v":2})"))); // changed settings: an update
    ASSERT_TRUE(host_->unsubscribe("echo", "unknown"));
    const auto lc = out_.lifecycle();
    EXPECT_EQ(std::count_if(lc.begin(), lc.end(),
                            [](const auto& m) { return m.rfind("subscribe sub-1", 0) == 0; }),
              2);
    EXPECT_EQ(std::count_if(lc.begin(), lc.end(),
                            [](const auto& m) { return m.rfind("unsubscribe", 0) == 0; }),
              0);
    ASSERT_EQ(host_->instances().size(), 1u);
    EXPECT_THAT(host_->instances()[0].subscriptions, ElementsAre("sub-1"));
}

TEST_F(ConnectorHostTest, SubscribeRefusalCarriesTheConnectorsReason) {
    add_echo();
    auto r = host_->subscribe(sub("sub-1", "echo", R"({"refuse":true})"));
    ASSERT_FALSE(r);
    EXPECT_THAT(
        r.error().message,
        HasSubstr("refused subscription sub-1: subscription setting 'refuse' is not allowed"));
    auto unknown = host_->subscribe(sub("sub-2", "nobody"));
    ASSERT_FALSE(unknown);
    EXPECT_THAT(unknown.error().message, HasSubstr("connector instance 'nobody' is not loaded"));
}

TEST_F(ConnectorHostTest, RespondsOnlyAfterTheCommit) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1"), out_.reply_to());
    ASSERT_TRUE(sink_.wait_for(1));
    const auto s = sink_.at(0);
    EXPECT_EQ(s.subscription_id, "sub-1");
    EXPECT_EQ(s.provider_event_id, "evt-1");
    EXPECT_TRUE(s.verified);
    EXPECT_EQ(s.received_at, clock_.now_ms());
    EXPECT_EQ(s.content_json, R"({"webhook":{"size":17}})");
    EXPECT_TRUE(out_.replies().empty()); // not before the commit

    submit_result committed;
    committed.status = submit_status::accepted;
    committed.run_id = "run_1";
    committed.delivery_id = "dlv_1";
    sink_.commit(0, committed);
    ASSERT_TRUE(out_.wait_replies(1));
    const auto reply = out_.replies().at(0);
    EXPECT_EQ(reply.status, 200);
    EXPECT_THAT(reply.body, HasSubstr(R"("outcome":"accepted")"));
    EXPECT_THAT(reply.body, HasSubstr(R"("runId":"run_1")"));
    EXPECT_THAT(reply.headers, ::testing::Contains(std::pair<std::string, std::string>(
                                   "content-type", "application/json")));
    EXPECT_EQ(host_->stats("echo")->submits, 1u);
    EXPECT_EQ(host_->errors("echo"), 0u);
}

TEST_F(ConnectorHostTest, AnswersADuplicateWithThePriorRun) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1"), out_.reply_to());
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1"), out_.reply_to());
    ASSERT_TRUE(sink_.wait_for(2));
    EXPECT_EQ(sink_.at(0).provider_event_id, sink_.at(1).provider_event_id);
    sink_.commit(0, submit_result{submit_status::accepted, "run_1", "dlv_1", 0, ""});
    sink_.commit(1, submit_result{submit_status::duplicate, "run_1", "dlv_1", 0, ""});
    ASSERT_TRUE(out_.wait_replies(2));
    // Completions run on the host's worker pool, so the two replies may arrive in either order.
    const auto replies = out_.replies();
    int duplicates = 0;
    for (const auto& r : replies) {
        EXPECT_THAT(r.body, HasSubstr(R"("runId":"run_1")"));
        duplicates += r.body.find(R"("outcome":"duplicate")") != std::string::npos ? 1 : 0;
    }
    EXPECT_EQ(duplicates, 1);
}

TEST_F(ConnectorHostTest, MapsARefusalToItsReason) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1"), out_.reply_to());
    ASSERT_TRUE(sink_.wait_for(1));
    sink_.commit(0, submit_result{submit_status::not_active, "", "", 0, "paused"});
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 503);
    EXPECT_THAT(out_.replies()[0].body, HasSubstr(R"("reason":"subscription_not_active")"));
}

TEST_F(ConnectorHostTest, CompletesTheSubmitCallbackExactlyOnce) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1"), out_.reply_to());
    ASSERT_TRUE(sink_.wait_for(1));
    sink_.commit(0, submit_result{submit_status::accepted, "run_1", "dlv_1", 0, ""});
    sink_.commit(0, submit_result{submit_status::accepted, "run_2", "dlv_2", 0, ""});
    ASSERT_TRUE(out_.wait_replies(1));
    ASSERT_TRUE(host_->remove_instance("echo")); // drains: a second completion would show up now
    EXPECT_EQ(out_.replies().size(), 1u);
    EXPECT_EQ(host_->errors("echo"), 0u);
}

TEST_F(ConnectorHostTest, AnswersSilentConnectorsWith503AndIgnoresTheLateRespond) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("quiet", "echo", R"({"mode":"silent"})")));
    host_->handle(sub("quiet"), request("/v1/ingest/quiet"), out_.reply_to());
    EXPECT_TRUE(out_.replies().empty());
    clock_.advance(options_.respond_timeout_ms + 1);
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 503);
    EXPECT_EQ(host_->stats("echo")->timeouts, 1u);

    // The connector answers the held request now: ignored (WB_ERR_STATE = 5), counted, not re-sent.
    collector second;
    host_->handle(sub("quiet"), request("/v1/ingest/quiet?release"), second.reply_to());
    ASSERT_TRUE(second.wait_replies(1));
    EXPECT_EQ(second.replies()[0].body, "released");
    ASSERT_TRUE(out_.wait_log("late respond status 5"));
    EXPECT_EQ(out_.replies().size(), 1u);
    EXPECT_GE(host_->errors("echo"), 2u); // the timeout and the late respond
}

TEST_F(ConnectorHostTest, AnswersADroppedRequestWith500) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1?drop"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 500);
    EXPECT_GE(host_->errors("echo"), 1u);
}

TEST_F(ConnectorHostTest, ContainsAndCountsExceptionsFromTheModule) {
    auto r = host_->add_instance({"thrower", "throws_in_callback", "{}"});
    ASSERT_TRUE(r) << r.error().message;
    auto s = host_->subscribe(sub("sub-1", "thrower"));
    ASSERT_FALSE(s);
    EXPECT_GE(host_->errors("thrower"), 1u);
    EXPECT_THAT(out_.messages(), ::testing::Contains(HasSubstr("boom in subscribe")));

    ASSERT_TRUE(host_->subscribe(sub("sub-2", "thrower", R"({"ok":1})")));
    const auto before = host_->errors("thrower");
    host_->handle(sub("sub-2", "thrower"), request("/v1/ingest/sub-2"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 500);
    EXPECT_GT(host_->errors("thrower"), before);
    EXPECT_THAT(out_.messages(), ::testing::Contains(HasSubstr("boom in on_http_request")));
    // Still serving.
    host_->handle(sub("sub-2", "thrower"), request("/v1/ingest/sub-2"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(2));
    EXPECT_TRUE(host_->remove_instance("thrower"));
}

// connector.h: settings are validated against the descriptor's schemas before the module sees them.
TEST_F(ConnectorHostTest, SettingsOutsideTheModulesSchemasNeverReachTheModule) {
    auto config = host_->add_instance({"echo", "good_echo", R"({"greeting":5})"});
    ASSERT_FALSE(config);
    EXPECT_THAT(config.error().message,
                HasSubstr("settings of connector instance 'echo' do not match module good_echo's "
                          "config schema: /greeting"));
    EXPECT_THAT(out_.lifecycle(), ::testing::IsEmpty());
    add_echo(R"({"greeting":"hi"})");
    auto s = host_->subscribe(sub("sub-1", "echo", R"({"channel":7})"));
    ASSERT_FALSE(s);
    EXPECT_THAT(s.error().message, HasSubstr("settings of subscription sub-1 do not match module "
                                             "good_echo's subscription schema: /channel"));
    EXPECT_THAT(s.error().message, ::testing::Not(HasSubstr("7")));
    EXPECT_THAT(out_.lifecycle(), ElementsAre("create", "start"));
    EXPECT_TRUE(host_->subscribe(sub("sub-1", "echo", R"({"channel":"c"})")));
}

TEST_F(ConnectorHostTest, RefusesRejectedConfigAtEachStep) {
    auto validated = host_->add_instance({"echo", "good_echo", R"({"reject":true})"});
    ASSERT_FALSE(validated);
    EXPECT_THAT(validated.error().message,
                HasSubstr("good_echo.so: config rejected: setting 'reject'"));
    auto constructed = host_->add_instance({"echo", "good_echo", R"({"throw":true})"});
    ASSERT_FALSE(constructed);
    EXPECT_THAT(
        constructed.error().message,
        HasSubstr("good_echo.so: config rejected: setting 'throw' makes the constructor refuse"));
    auto rejected = host_->add_instance({"r", "rejects_config", "{}"});
    ASSERT_FALSE(rejected);
    EXPECT_THAT(rejected.error().message,
                HasSubstr("rejects_config.so: config rejected: api_key is required"));
    EXPECT_TRUE(host_->instances().empty());
}

TEST_F(ConnectorHostTest, SurfacesTheLoadGates) {
    auto r = host_->add_instance({"x", "bad_abi_major", "{}"});
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("bad_abi_major.so: ABI major"));
    auto missing = host_->add_instance({"y", "absent", "{}"});
    ASSERT_FALSE(missing);
    EXPECT_THAT(missing.error().message, HasSubstr("absent.so: not found"));
}

TEST_F(ConnectorHostTest, RefusesADuplicateInstanceName) {
    add_echo();
    auto r = host_->add_instance({"echo", "good_echo", "{}"});
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("defined twice"));
}

TEST_F(ConnectorHostTest, RoutesOnlyConnectorBackedSubscriptions) {
    add_echo();
    EXPECT_TRUE(host_->serves(sub("sub-1")));
    EXPECT_FALSE(host_->serves(sub("sub-1", "")));
    EXPECT_FALSE(host_->serves(sub("sub-1", "nobody")));
    EXPECT_THAT(host_->sources(), ElementsAre("webhook"));
    host_->handle(sub("sub-1", "nobody"), request("/v1/ingest/sub-1"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 404);
}

TEST_F(ConnectorHostTest, RunsQueuedTasksAtStopBeforeDestroy) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1?task"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 202);
    ASSERT_TRUE(host_->remove_instance("echo"));
    const auto msgs = out_.messages();
    const auto pos = [&](const std::string& m) {
        return std::find(msgs.begin(), msgs.end(), m) - msgs.begin();
    };
    EXPECT_LT(pos("lifecycle stop"), pos("task ran"));
    EXPECT_LT(pos("task ran"), pos("lifecycle destroy"));
    EXPECT_LT(pos("lifecycle destroy"), static_cast<long>(msgs.size()));
}

TEST_F(ConnectorHostTest, AnswersOpenRequestsWhenTheInstanceStops) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("quiet", "echo", R"({"mode":"silent"})")));
    host_->handle(sub("quiet"), request("/v1/ingest/quiet"), out_.reply_to());
    ASSERT_TRUE(host_->remove_instance("echo"));
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 503);
    EXPECT_FALSE(host_->serves(sub("quiet")));
}

TEST_F(ConnectorHostTest, RegistersDiscoveredSubscriptionsThenSubscribesThem) {
    std::vector<discovered_subscription> seen;
    std::mutex mu;
    options_.register_subscription =
        [&](const discovered_subscription& d) -> std::optional<std::string> {
        std::lock_guard lk(mu);
        seen.push_back(d);
        return std::nullopt;
    };
    host_ = std::make_unique<connector_host>(options_, sink_, clock_, random_);
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1?register"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].body, "register 0 ");
    ASSERT_TRUE(out_.wait_log(
        "lifecycle subscribe discovered-1 https://bridge.example/v1/ingest/discovered-1"));
    std::lock_guard lk(mu);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].connector, "echo");
    EXPECT_EQ(seen[0].source, "email");
    EXPECT_EQ(seen[0].workflow_id, "wf-d");
}

TEST_F(ConnectorHostTest, RegisterIsUnsupportedWithoutARegistrar) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1?register"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_THAT(out_.replies()[0].body, HasSubstr("register 2 "));
}

TEST_F(ConnectorHostTest, RefusesASubmitForAnotherConnectorsSubscription) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1?foreign"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].body, "foreign 1"); // WB_ERR_INVALID, callback never called
    EXPECT_EQ(host_->stats("echo")->submits, 0u);
    EXPECT_GE(host_->errors("echo"), 1u);
}

TEST_F(ConnectorHostTest, ServesClockCapacityAndRandomness) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    sink_.capacity_ = false;
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1?services"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    testing::seeded_random same;
    unsigned char expected[8];
    same.fill(expected, sizeof expected);
    std::string hex;
    for (unsigned char b : expected) {
        static constexpr char d[] = "0123456789abcdef";
        hex += d[b >> 4];
        hex += d[b & 0xf];
    }
    EXPECT_EQ(out_.replies()[0].body,
              "now " + std::to_string(clock_.now_ms()) + " capacity 0 random 0 " + hex);
}

TEST_F(ConnectorHostTest, RefusesAResponseWithAnInjectedHeader) {
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1?badheader"), out_.reply_to());
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 500);
    EXPECT_EQ(out_.replies()[0].body.find("set-cookie"), std::string::npos);
    EXPECT_GE(host_->errors("echo"), 1u);
}

TEST_F(ConnectorHostTest, LeaksRatherThanDestroysAnInstanceWithWorkInFlight) {
    options_.stop_timeout_ms = 50; // real milliseconds for the drain wait
    host_ = std::make_unique<connector_host>(options_, sink_, clock_, random_);
    add_echo();
    ASSERT_TRUE(host_->subscribe(sub("sub-1")));
    host_->handle(sub("sub-1"), request("/v1/ingest/sub-1"), out_.reply_to());
    ASSERT_TRUE(sink_.wait_for(1)); // never committed
    auto r = host_->remove_instance("echo");
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("did not finish in-flight work"));
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 503);
    const auto lc = out_.lifecycle();
    EXPECT_EQ(std::count(lc.begin(), lc.end(), "destroy"), 0);
}

TEST_F(ConnectorHostTest, WritesLogLinesAsJson) {
    add_echo();
    bool found = false;
    for (const auto& m : out_.messages()) {
        found = found || m == "lifecycle create";
    }
    EXPECT_TRUE(found);
}

// api->store_attachment: the forms module (a real uploader) stores an uploaded file through the
// host; the bytes land fsynced in the configured directory under the reference's hex, and the event
// carries only the reference.
class ConnectorHostAttachmentTest : public ConnectorHostTest {
  protected:
    void start_forms(const std::string& attachment_dir) {
        options_.module_dirs = {WOPBRIDGE_MODULE_DIR};
        options_.attachment_dir = attachment_dir;
        host_ = std::make_unique<connector_host>(options_, sink_, clock_, random_);
        auto r = host_->add_instance({"forms", "forms", "{}"});
        ASSERT_TRUE(r) << r.error().message;
        auto s = sub("contact", "forms", R"({"allowedOrigins":["https://example.com"]})");
        s.source = source_kind::form;
        ASSERT_TRUE(host_->subscribe(s));
    }

    void post_upload(const std::string& content) {
        inbound_http_request r;
        r.target = "/v1/ingest/contact";
        r.headers = {{"Content-Type", "multipart/form-data; boundary=xyzzy"},
                     {"Origin", "https://example.com"},
                     {"Accept", "application/json"}};
        r.body = "--xyzzy\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAda\r\n"
                 "--xyzzy\r\nContent-Disposition: form-data; name=\"cv\"; filename=\"cv.txt\"\r\n"
                 "Content-Type: text/plain\r\n\r\n" +
                 content + "\r\n--xyzzy--\r\n";
        auto s = sub("contact", "forms");
        s.source = source_kind::form;
        host_->handle(s, r, out_.reply_to());
    }

    testing::temp_dir dir_;
};

TEST_F(ConnectorHostAttachmentTest, StoresUploadsInTheConfiguredDirectory) {
    start_forms(dir_.file("attachments"));
    post_upload("line one\nline two\n");
    ASSERT_TRUE(sink_.wait_for(1));
    const auto event = boost::json::parse(sink_.at(0).content_json).as_object();
    const auto& files = event.at("form").at("files").as_array();
    ASSERT_EQ(files.size(), 1u) << sink_.at(0).content_json;
    const std::string ref(files[0].at("ref").as_string());
    ASSERT_EQ(ref.rfind("att_", 0), 0u) << ref;
    EXPECT_EQ(sink_.at(0).content_json.find("line one"), std::string::npos); // not inline
    std::ifstream in(dir_.file("attachments/" + ref.substr(4)), std::ios::binary);
    std::stringstream stored;
    stored << in.rdbuf();
    EXPECT_EQ(stored.str(), "line one\nline two\n");
    sink_.commit(0, submit_result{submit_status::accepted, "run_1", "dlv_1", 0, ""});
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 202);
}

TEST_F(ConnectorHostAttachmentTest, WithoutADirectoryAnUploadIsRefusedNotCrashed) {
    start_forms("");
    post_upload("bytes");
    ASSERT_TRUE(out_.wait_replies(1));
    EXPECT_EQ(out_.replies()[0].status, 503); // the connector's "could not store the upload"
    EXPECT_EQ(sink_.size(), 0u);
}

} // namespace
} // namespace wopbridge
