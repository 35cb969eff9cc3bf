#include "wopbridge/listener_submit.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge {
namespace {

// The host behind the C table: records each submit and its completion.
struct recording_host {
    wb_status answer = WB_OK;
    std::vector<std::string> subscription_ids;
    std::vector<std::string> provider_ids;
    std::vector<bool> verified;
    std::vector<std::int64_t> received_at;
    std::vector<std::pair<wb_submit_done_fn, void*>> done;

    static recording_host& of(wb_host* h) { return *reinterpret_cast<recording_host*>(h); }
};

std::int64_t clock_ms(wb_host*) {
    return 1'767'225'600'123;
}

wb_status record_submit(wb_host* h, const wb_inbound_event* ev, wb_submit_done_fn done,
                        void* user) {
    auto& r = recording_host::of(h);
    if (r.answer != WB_OK) {
        return r.answer;
    }
    r.subscription_ids.emplace_back(ev->subscription_id.data, ev->subscription_id.size);
    r.provider_ids.emplace_back(ev->provider_event_id.data, ev->provider_event_id.size);
    r.verified.push_back(ev->verified != 0);
    r.received_at.push_back(ev->received_at_ms);
    r.done.emplace_back(done, user);
    return WB_OK;
}

class SdkListenerSubmitTest : public ::testing::Test {
  protected:
    SdkListenerSubmitTest() {
        api_.struct_size = sizeof api_;
        api_.abi_major = WOPBRIDGE_ABI_MAJOR;
        api_.abi_minor = WOPBRIDGE_ABI_MINOR;
        api_.now_ms = clock_ms;
        api_.submit = record_submit;
    }

    void submit(std::uint64_t key) {
        inbound_event ev;
        ev.provider_event_id = "orders:" + std::to_string(key);
        ev.verified = true; // the helper decides: a broker never verifies the publisher
        ev.content_json = R"({"stream":{}})";
        submit_held_message(
            host_, std::move(ev), "sub-1", key,
            [this](std::uint64_t k) { answers_.push_back("committed " + std::to_string(k)); },
            [this](std::uint64_t k, const std::string& reason, int retry_after) {
                answers_.push_back("refused " + std::to_string(k) + " " + reason + " " +
                                   std::to_string(retry_after));
            });
    }

    void complete(std::size_t i, wb_submit_status status, const char* reason = "",
                  int retry_after = 0) {
        wb_submit_outcome o{};
        o.struct_size = sizeof o;
        o.status = status;
        o.reason = {reason, std::char_traits<char>::length(reason)};
        o.retry_after_seconds = retry_after;
        recorded_.done.at(i).first(recorded_.done.at(i).second, &o);
    }

    recording_host recorded_;
    wb_host_api api_{};
    host host_{&api_, reinterpret_cast<wb_host*>(&recorded_)};
    std::vector<std::string> answers_;
};

TEST_F(SdkListenerSubmitTest, SubmitsUnverifiedForTheSubscriptionAtTheHostsTime) {
    submit(7);
    ASSERT_EQ(recorded_.done.size(), 1u);
    EXPECT_EQ(recorded_.subscription_ids[0], "sub-1");
    EXPECT_EQ(recorded_.provider_ids[0], "orders:7");
    EXPECT_FALSE(recorded_.verified[0]);
    EXPECT_EQ(recorded_.received_at[0], 1'767'225'600'123);
    EXPECT_TRUE(answers_.empty()); // nothing before the host answers
    complete(0, WB_SUBMIT_ACCEPTED); // a host answers every submit it took, once
    EXPECT_EQ(answers_, (std::vector<std::string>{"committed 7"}));
}

TEST_F(SdkListenerSubmitTest, CommittedOrRecognisedOutcomesAreCommitsByKey) {
    submit(1);
    submit(2);
    submit(3);
    complete(1, WB_SUBMIT_DUPLICATE);
    complete(0, WB_SUBMIT_ACCEPTED);
    complete(2, WB_SUBMIT_HELD);
    EXPECT_EQ(answers_, (std::vector<std::string>{"committed 2", "committed 1", "committed 3"}));
}

TEST_F(SdkListenerSubmitTest, ARefusalCarriesItsReasonAndRetryAfter) {
    submit(4);
    complete(0, WB_SUBMIT_REFUSED, "overloaded", 3);
    EXPECT_EQ(answers_, (std::vector<std::string>{"refused 4 overloaded 3"}));
}

TEST_F(SdkListenerSubmitTest, ASubmitTheHostDidNotTakeIsARefusalAtOnce) {
    recorded_.answer = WB_ERR_BUSY;
    submit(5);
    EXPECT_TRUE(recorded_.done.empty());
    EXPECT_EQ(answers_,
              (std::vector<std::string>{"refused 5 " + not_taken_reason(status::busy) + " 0"}));
}

} // namespace
} // namespace wopbridge
