// A store is bound to one host key (issue 16): a second key on the same store, from another node
// or after the key file was replaced, is refused before it can answer 401 to correctly signed
// requests or start a second run for an event already taken.
#include "app/bridge.hpp"

#include "store/store.hpp"
#include "support/fake_clock.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sqlite3.h>

namespace wopbridge {
namespace {

using ::testing::HasSubstr;

class BridgeHostKeyTest : public ::testing::Test {
protected:
    std::unique_ptr<bridge> open_with_key(const std::string& key_name) {
        bridge_settings settings;
        settings.host_key_file = dir_.file(key_name);
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        EXPECT_TRUE(st.has_value());
        auto starter = std::make_unique<testing::scripted_run_starter>(std::vector<std::string>{"wf"});
        return std::make_unique<bridge>(settings, std::move(*st), std::move(starter), clock_, random_);
    }

    static registration_request webhook_request() {
        registration_request req;
        req.tenant = "acme";
        req.workflow_id = "wf";
        req.verification = verification_mode::required;
        return req;
    }

    void forget_the_binding() {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(dir_.file("bridge.db").c_str(), &db), SQLITE_OK);
        EXPECT_EQ(sqlite3_exec(db, "DELETE FROM store_meta", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
    }

    testing::temp_dir dir_;
    testing::fake_clock clock_;
    testing::seeded_random random_{5};
};

TEST_F(BridgeHostKeyTest, AStoreIsBoundToTheFirstKeyAndRefusesAnother) {
    {
        auto first = open_with_key("a.key");
        ASSERT_TRUE(first->start());
        ASSERT_TRUE(first->register_subscription(webhook_request()));
    }
    auto second = open_with_key("b.key");
    error_info why;
    auto bound = second->bind_host_key(why);
    ASSERT_FALSE(bound);
    EXPECT_EQ(bound.error(), make_error_code(errc::conflict));
    EXPECT_THAT(why.message, HasSubstr("the host key in " + dir_.file("b.key") +
                                       " is not the key this store was sealed with"));
    EXPECT_THAT(why.message, HasSubstr("docs/guarantees/host-key.md"));
    EXPECT_EQ(second->start().error(), make_error_code(errc::conflict));
    EXPECT_EQ(second->register_subscription(webhook_request()).error(),
              make_error_code(errc::conflict));
    EXPECT_EQ(second->apply_config_subscriptions({}, {}).error(), make_error_code(errc::conflict));

    // The first key still serves the store.
    auto again = open_with_key("a.key");
    EXPECT_TRUE(again->start());
}

TEST_F(BridgeHostKeyTest, AStoreFromBeforeKeyChecksIsBoundOnlyByTheKeyItsSecretsOpenWith) {
    {
        auto first = open_with_key("a.key");
        ASSERT_TRUE(first->start());
        ASSERT_TRUE(first->register_subscription(webhook_request()));
    }
    forget_the_binding(); // as a store written before the check existed
    {
        auto other = open_with_key("b.key");
        EXPECT_EQ(other->start().error(), make_error_code(errc::conflict));
    }
    auto original = open_with_key("a.key");
    EXPECT_TRUE(original->start());
    auto other = open_with_key("b.key");
    EXPECT_EQ(other->start().error(), make_error_code(errc::conflict));
}

} // namespace
} // namespace wopbridge
