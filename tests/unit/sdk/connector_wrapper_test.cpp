// The header-only wrapper against a fake host table: trampolines, exception containment,
// exactly-once responses, callback ownership and the struct_size checks.
#include "wopbridge/connector.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <stdexcept>

namespace {

using ::testing::HasSubstr;

// The fake host behind the C table; wb_host* points at it.
struct fake_host {
    std::vector<std::pair<int, std::string>> logs;
    std::map<std::uintptr_t, int> responses; // ctx -> status
    std::map<std::uintptr_t, std::string> bodies;
    std::vector<std::pair<wb_submit_done_fn, void*>> submits;
    std::vector<std::string> submitted_ids;
    std::vector<std::pair<wb_task_fn, void*>> tasks;
    wb_status submit_status = WB_OK;
    int capacity = 1;

    static fake_host& of(wb_host* h) { return *reinterpret_cast<fake_host*>(h); }
    wb_host* handle() { return reinterpret_cast<wb_host*>(this); }
    bool logged(const std::string& part) const {
        for (const auto& [lvl, m] : logs) {
            if (m.find(part) != std::string::npos) {
                return true;
            }
        }
        return false;
    }
};

void f_log(wb_host* h, wb_log_level l, wb_str m) {
    fake_host::of(h).logs.emplace_back(l, std::string(m.data, m.size));
}
int64_t f_now(wb_host*) {
    return 1767225600000;
}
wb_status f_random(wb_host*, uint8_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        out[i] = static_cast<uint8_t>(i);
    }
    return WB_OK;
}
wb_status f_submit(wb_host* h, const wb_inbound_event* ev, wb_submit_done_fn done, void* user) {
    auto& f = fake_host::of(h);
    if (f.submit_status != WB_OK) {
        return f.submit_status;
    }
    f.submitted_ids.emplace_back(ev->subscription_id.data, ev->subscription_id.size);
    f.submits.emplace_back(done, user);
    return WB_OK;
}
wb_status f_respond(wb_host* h, wb_request_ctx* ctx, const wb_http_response* r) {
    auto& f = fake_host::of(h);
    const auto id = reinterpret_cast<std::uintptr_t>(ctx);
    if (f.responses.count(id) != 0) {
        return WB_ERR_STATE;
    }
    f.responses[id] = r->status;
    f.bodies[id] = std::string(r->body.data == nullptr ? "" : r->body.data, r->body.size);
    return WB_OK;
}
wb_status f_register(wb_host*, const wb_subscription_request* r, char* buf, size_t n) {
    std::snprintf(buf, n, "id %.*s taken", static_cast<int>(r->id.size), r->id.data);
    return WB_ERR_INVALID;
}
wb_status f_post(wb_host* h, int64_t, wb_task_fn fn, void* user) {
    fake_host::of(h).tasks.emplace_back(fn, user);
    return WB_OK;
}
int f_capacity(wb_host* h) {
    return fake_host::of(h).capacity;
}

wb_host_api make_api() {
    wb_host_api a{};
    a.struct_size = sizeof a;
    a.abi_major = WOPBRIDGE_ABI_MAJOR;
    a.abi_minor = WOPBRIDGE_ABI_MINOR;
    a.log = f_log;
    a.now_ms = f_now;
    a.random_bytes = f_random;
    a.submit = f_submit;
    a.respond = f_respond;
    a.register_subscription = f_register;
    a.post_task = f_post;
    a.has_capacity = f_capacity;
    return a;
}

class probe final : public wopbridge::connector {
  public:
    static inline probe* last = nullptr;
    static wopbridge::connector_info info() {
        wopbridge::connector_info i;
        i.name = "probe";
        i.version = "9.9.9";
        i.status = "stable";
        i.security_posture = "probe";
        i.source = "form";
        i.capabilities = WB_CAP_HTTP_INGEST | WB_CAP_TOKEN_GET;
        return i;
    }
    static wopbridge::status validate(std::string_view config, std::string& error) {
        if (config == "bad") {
            error = "a rather long reason that will be truncated";
            return wopbridge::status::invalid;
        }
        if (config == "throw") {
            throw std::runtime_error("validate threw");
        }
        return wopbridge::status::ok;
    }
    probe(wopbridge::host& host, std::string_view config) : host_(host) {
        if (config == "ctor-throws") {
            throw std::invalid_argument("missing api_key");
        }
        last = this;
    }
    ~probe() override { last = nullptr; }
    wopbridge::status start() override {
        if (throw_in_start) {
            throw std::runtime_error("start exploded");
        }
        calls.push_back("start");
        return wopbridge::status::ok;
    }
    wopbridge::status subscribe(const wopbridge::subscription_info& s,
                                std::string& error) override {
        calls.push_back("subscribe " + std::string(s.id) + " " + std::string(s.settings_json));
        if (s.settings_json == "nope") {
            error = "nope";
            return wopbridge::status::invalid;
        }
        return wopbridge::status::ok;
    }
    wopbridge::status unsubscribe(std::string_view id) override {
        calls.push_back("unsubscribe " + std::string(id));
        return wopbridge::status::ok;
    }
    void on_http_request(wopbridge::request_handle req,
                         const wopbridge::http_request_view& r) override {
        seen_method = std::string(r.method);
        seen_sig = std::string(r.header("X-Sig").value_or(""));
        if (r.target == "/throw") {
            throw std::runtime_error("handler exploded");
        }
        if (r.target == "/drop") {
            return;
        }
        if (r.target == "/keep") {
            kept = std::move(req);
            return;
        }
        first_respond = req.respond(201, {{"x-a", "b"}}, "made");
        second_respond = req.respond(202);
    }
    wopbridge::status stop(std::int64_t deadline_ms) override {
        calls.push_back("stop " + std::to_string(deadline_ms));
        return wopbridge::status::ok;
    }

    wopbridge::host& host_;
    bool throw_in_start = false;
    std::vector<std::string> calls;
    std::string seen_method;
    std::string seen_sig;
    wopbridge::request_handle kept;
    wopbridge::status first_respond = wopbridge::status::internal;
    wopbridge::status second_respond = wopbridge::status::internal;
};

class ConnectorWrapperTest : public ::testing::Test {
  protected:
    ConnectorWrapperTest() : d_(wopbridge::detail::descriptor_for<probe>()), api_(make_api()) {}
    ~ConnectorWrapperTest() override {
        if (conn_ != nullptr) {
            d_->destroy(conn_);
        }
    }

    void create(std::string_view config = "{}") {
        char buf[128] = {0};
        ASSERT_EQ(d_->create(&api_, fake_.handle(), wb_str{config.data(), config.size()}, &conn_,
                             buf, sizeof buf),
                  WB_OK)
            << buf;
        ASSERT_NE(probe::last, nullptr);
    }

    std::uintptr_t request(const char* target, std::uintptr_t ctx) {
        wb_header h{{"x-sig", 5}, {"abc", 3}};
        wb_http_request r{};
        r.struct_size = sizeof r;
        r.subscription_id = {"sub", 3};
        r.method = {"POST", 4};
        r.target = {target, std::strlen(target)};
        r.headers = &h;
        r.header_count = 1;
        d_->on_http_request(conn_, reinterpret_cast<wb_request_ctx*>(ctx), &r);
        return ctx;
    }

    const wb_connector_descriptor* d_;
    wb_host_api api_;
    fake_host fake_;
    wb_connector* conn_ = nullptr;
};

TEST_F(ConnectorWrapperTest, BuildsTheDescriptorFromInfo) {
    ASSERT_NE(d_, nullptr);
    EXPECT_EQ(d_->struct_size, sizeof(wb_connector_descriptor));
    EXPECT_EQ(d_->abi_major, WOPBRIDGE_ABI_MAJOR);
    EXPECT_EQ(d_->abi_minor, WOPBRIDGE_ABI_MINOR);
    EXPECT_STREQ(d_->name, "probe");
    EXPECT_STREQ(d_->version, "9.9.9");
    EXPECT_STREQ(d_->status, "stable");
    EXPECT_STREQ(d_->source, "form");
    EXPECT_STRNE(d_->sdk_build_id, "");
    EXPECT_EQ(d_->capabilities, WB_CAP_HTTP_INGEST | WB_CAP_TOKEN_GET);
    EXPECT_NE(d_->on_http_request, nullptr);
    EXPECT_EQ(d_, wopbridge::detail::descriptor_for<probe>()); // one static descriptor
}

TEST_F(ConnectorWrapperTest, ValidateTruncatesItsReason) {
    char buf[8];
    std::memset(buf, 'x', sizeof buf);
    EXPECT_EQ(d_->validate({"bad", 3}, buf, sizeof buf), WB_ERR_INVALID);
    EXPECT_STREQ(buf, "a rathe");
    char big[64] = {0};
    EXPECT_EQ(d_->validate({"throw", 5}, big, sizeof big), WB_ERR_INVALID);
    EXPECT_STREQ(big, "validate threw");
    EXPECT_EQ(d_->validate({"{}", 2}, big, sizeof big), WB_OK);
}

TEST_F(ConnectorWrapperTest, CreateReportsAThrowingConstructorAsInvalid) {
    char buf[64] = {0};
    wb_connector* c = reinterpret_cast<wb_connector*>(0x1);
    EXPECT_EQ(d_->create(&api_, fake_.handle(), {"ctor-throws", 11}, &c, buf, sizeof buf),
              WB_ERR_INVALID);
    EXPECT_EQ(c, nullptr);
    EXPECT_STREQ(buf, "missing api_key");
}

TEST_F(ConnectorWrapperTest, CreateRefusesAHostOfAnotherMajor) {
    auto api = make_api();
    api.abi_major = WOPBRIDGE_ABI_MAJOR + 1;
    char buf[128] = {0};
    wb_connector* c = nullptr;
    EXPECT_EQ(d_->create(&api, fake_.handle(), {"{}", 2}, &c, buf, sizeof buf), WB_ERR_UNSUPPORTED);
    EXPECT_EQ(c, nullptr);
}

TEST_F(ConnectorWrapperTest, ForwardsLifecycleCalls) {
    create();
    EXPECT_EQ(d_->start(conn_), WB_OK);
    wb_subscription s{};
    s.struct_size = sizeof s;
    s.id = {"s1", 2};
    s.settings_json = {"nope", 4};
    char buf[32] = {0};
    EXPECT_EQ(d_->subscribe(conn_, &s, buf, sizeof buf), WB_ERR_INVALID);
    EXPECT_STREQ(buf, "nope");
    s.settings_json = {"{}", 2};
    EXPECT_EQ(d_->subscribe(conn_, &s, buf, sizeof buf), WB_OK);
    EXPECT_EQ(d_->unsubscribe(conn_, {"s1", 2}), WB_OK);
    EXPECT_EQ(d_->stop(conn_, 42), WB_OK);
    EXPECT_THAT(probe::last->calls,
                ::testing::ElementsAre("start", "subscribe s1 nope", "subscribe s1 {}",
                                       "unsubscribe s1", "stop 42"));
}

TEST_F(ConnectorWrapperTest, TurnsExceptionsIntoInternalAndLogsThem) {
    create();
    probe::last->throw_in_start = true;
    EXPECT_EQ(d_->start(conn_), WB_ERR_INTERNAL);
    ASSERT_FALSE(fake_.logs.empty());
    EXPECT_EQ(fake_.logs.back().first, WB_LOG_ERROR);
    EXPECT_THAT(fake_.logs.back().second, HasSubstr("start exploded"));
}

TEST_F(ConnectorWrapperTest, RespondsExactlyOnce) {
    create();
    const auto ctx = request("/ok", 7);
    EXPECT_EQ(fake_.responses.at(ctx), 201);
    EXPECT_EQ(fake_.bodies.at(ctx), "made");
    EXPECT_EQ(probe::last->first_respond, wopbridge::status::ok);
    EXPECT_EQ(probe::last->second_respond, wopbridge::status::state);
    EXPECT_EQ(probe::last->seen_method, "POST");
    EXPECT_EQ(probe::last->seen_sig, "abc"); // case-insensitive lookup
}

TEST_F(ConnectorWrapperTest, AnswersADroppedOrThrowingRequestWith500) {
    create();
    EXPECT_EQ(fake_.responses.at(request("/drop", 8)), 500);
    EXPECT_TRUE(fake_.logged("dropped without a response"));
    EXPECT_EQ(fake_.responses.at(request("/throw", 9)), 500);
    EXPECT_TRUE(fake_.logged("handler exploded"));
}

TEST_F(ConnectorWrapperTest, KeepsAMovedHandleOpenUntilItResponds) {
    create();
    const auto ctx = request("/keep", 10);
    EXPECT_EQ(fake_.responses.count(ctx), 0u);
    EXPECT_TRUE(probe::last->kept.pending());
    EXPECT_EQ(probe::last->host_.respond(std::move(probe::last->kept), 204), wopbridge::status::ok);
    EXPECT_EQ(fake_.responses.at(ctx), 204);
    EXPECT_FALSE(probe::last->kept.pending());
}

TEST_F(ConnectorWrapperTest, SubmitCallbackRunsOnceWithTheOutcome) {
    create();
    auto& host = probe::last->host_;
    int calls = 0;
    wopbridge::submit_outcome seen;
    wopbridge::inbound_event ev;
    ev.subscription_id = "sub";
    ev.content_json = R"({"form":{}})";
    ASSERT_EQ(host.submit(ev,
                          [&](const wopbridge::submit_outcome& o) {
                              ++calls;
                              seen = o;
                          }),
              wopbridge::status::ok);
    ASSERT_EQ(fake_.submits.size(), 1u);
    EXPECT_EQ(fake_.submitted_ids[0], "sub");
    EXPECT_EQ(calls, 0);
    wb_submit_outcome o{};
    o.struct_size = sizeof o;
    o.status = WB_SUBMIT_DUPLICATE;
    o.run_id = {"run_7", 5};
    fake_.submits[0].first(fake_.submits[0].second, &o);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(seen.kind, wopbridge::outcome_kind::duplicate);
    EXPECT_EQ(seen.run_id, "run_7");
}

TEST_F(ConnectorWrapperTest, SubmitRefusedByTheHostNeverCallsBack) {
    create();
    fake_.submit_status = WB_ERR_BUSY;
    bool called = false;
    EXPECT_EQ(probe::last->host_.submit({}, [&](const auto&) { called = true; }),
              wopbridge::status::busy);
    EXPECT_TRUE(fake_.submits.empty());
    EXPECT_FALSE(called);
}

TEST_F(ConnectorWrapperTest, ContainsExceptionsInCallbacksAndTasks) {
    create();
    auto& host = probe::last->host_;
    ASSERT_EQ(host.submit({}, [](const auto&) { throw std::runtime_error("callback exploded"); }),
              wopbridge::status::ok);
    fake_.submits[0].first(fake_.submits[0].second, nullptr);
    EXPECT_TRUE(fake_.logged("callback exploded"));
    int ran = 0;
    ASSERT_EQ(host.post_task(0, [&] { ++ran; }), wopbridge::status::ok);
    ASSERT_EQ(host.post_task(5, [] { throw std::runtime_error("task exploded"); }),
              wopbridge::status::ok);
    for (auto& [fn, user] : fake_.tasks) {
        fn(user);
    }
    EXPECT_EQ(ran, 1);
    EXPECT_TRUE(fake_.logged("task exploded"));
}

TEST_F(ConnectorWrapperTest, UsesOnlyTheFunctionsTheHostTableHas) {
    api_.struct_size = offsetof(wb_host_api, register_subscription); // an older, shorter table
    create();
    auto& host = probe::last->host_;
    EXPECT_EQ(host.post_task(0, [] {}), wopbridge::status::unsupported);
    std::string error;
    EXPECT_EQ(host.register_subscription({"s", "email", "wf", "{}"}, error),
              wopbridge::status::unsupported);
    fake_.capacity = 0;
    EXPECT_TRUE(host.has_capacity()); // unknown to an older host: assume yes
    EXPECT_EQ(host.now_ms(), 1767225600000);
}

TEST_F(ConnectorWrapperTest, PassesHostServicesThrough) {
    create();
    auto& host = probe::last->host_;
    std::string error;
    EXPECT_EQ(host.register_subscription({"s9", "email", "wf", "{}"}, error),
              wopbridge::status::invalid);
    EXPECT_EQ(error, "id s9 taken");
    fake_.capacity = 0;
    EXPECT_FALSE(host.has_capacity());
    unsigned char bytes[4] = {9, 9, 9, 9};
    EXPECT_EQ(host.random_bytes(bytes, sizeof bytes), wopbridge::status::ok);
    EXPECT_EQ(bytes[3], 3);
    host.log(wopbridge::log_level::warn, "hi");
    EXPECT_EQ(fake_.logs.back(), (std::pair<int, std::string>{WB_LOG_WARN, "hi"}));
}

} // namespace
