// A store opens only with host keys it knows (issue 16): another key, from another node or after
// the key file was replaced, is refused before it can answer 401 to correctly signed requests or
// start a second run for an event already taken. A planned rotation keeps signatures and dedup
// keys: the host key only wraps the store's data key.
#include "app/bridge.hpp"
#include "app/host_key_check.hpp"
#include "app/preflight.hpp"
#include "config/config.hpp"
#include "store/store_forwarder.hpp"

#include "core/secret_box.hpp"
#include "store/store.hpp"
#include "wopbridge/signatures.hpp"
#include "support/fake_clock.hpp"
#include "support/scripted_run_starter.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

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

    std::unique_ptr<store> open_store() {
        sqlite_options o;
        o.path = dir_.file("bridge.db");
        auto st = open_sqlite_store(o);
        EXPECT_TRUE(st.has_value());
        return std::move(*st);
    }

    secret_box key(const std::string& key_name) {
        return secret_box::open(dir_.file(key_name), random_).value();
    }

    // What `wopbridge host-key add` does: the data key, opened with `from`, wrapped under `to` too.
    void allow_key(const std::string& from, const std::string& to) {
        auto st = open_store();
        auto unlocked = unlock_data_key(*st, key(from), random_, false);
        ASSERT_TRUE(unlocked);
        ASSERT_EQ(unlocked->verdict, host_key_verdict::matches);
        auto next = key(to);
        ASSERT_TRUE(st->add_data_key_wrap(next.key_check(), next.wrap(*unlocked->data_key, random_)));
    }

    submit_result ingest(bridge& b, const registration_result& reg, const std::string& webhook_id) {
        const std::string body = R"({"hello":"world"})";
        const std::int64_t ts = clock_.now_ms() / 1000;
        inbound_http_request r;
        r.target = "/v1/ingest/" + reg.record.id;
        r.body = body;
        r.headers = {{"content-type", "application/json"},
                     {"webhook-id", webhook_id},
                     {"webhook-timestamp", std::to_string(ts)},
                     {"webhook-signature",
                      *sig::sign_standard_webhooks(reg.signing_secret, webhook_id, ts, body)}};
        auto p = std::make_shared<std::promise<submit_result>>();
        auto f = p->get_future();
        b.ingest_webhook(reg.record.id, r, [p](submit_result res) { p->set_value(std::move(res)); });
        EXPECT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
        return f.get();
    }

    void forget_the_wraps() {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(dir_.file("bridge.db").c_str(), &db), SQLITE_OK);
        EXPECT_EQ(sqlite3_exec(db, "DELETE FROM store_meta WHERE name LIKE 'data_key_wrap:%'",
                               nullptr, nullptr, nullptr),
                  SQLITE_OK);
        sqlite3_close(db);
    }

    void insert_plain_subscription() {
        auto st = open_store();
        subscription plain;
        plain.id = "sub_plain";
        plain.tenant = "acme";
        plain.workflow_id = "wf";
        plain.webhook_id = "wh_plain";
        plain.verification = verification_mode::none;
        ASSERT_TRUE(st->insert_subscription(plain));
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
    auto bound = second->bind_host_key();
    ASSERT_FALSE(bound);
    EXPECT_EQ(bound.error().code, errc::conflict);
    EXPECT_THAT(bound.error().message, HasSubstr("the host key in " + dir_.file("b.key") +
                                                 " is not a key this store opens with"));
    EXPECT_THAT(bound.error().message, HasSubstr("docs/guarantees/host-key.md"));
    EXPECT_EQ(second->start().error(), make_error_code(errc::conflict));
    EXPECT_EQ(second->register_subscription(webhook_request()).error(),
              make_error_code(errc::conflict));
    EXPECT_EQ(second->apply_config_subscriptions({}, {}).error(), make_error_code(errc::conflict));

    // The first key still serves the store.
    auto again = open_with_key("a.key");
    EXPECT_TRUE(again->start());
}

TEST_F(BridgeHostKeyTest, AStoreFromBeforeKeyChecksIsBoundOnlyByTheKeyItsSecretsOpenWith) {
    // Rows from before data keys: everything was sealed and keyed with the host key itself.
    insert_plain_subscription();
    registration_result reg;
    {
        auto first = open_with_key("a.key");
        ASSERT_TRUE(first->start());
        reg = first->register_subscription(webhook_request()).value();
        ASSERT_EQ(ingest(*first, reg, "msg_legacy_0000000001").status, submit_status::accepted);
    }
    forget_the_binding(); // as a store written before the check existed
    {
        auto other = open_with_key("b.key");
        EXPECT_EQ(other->start().error(), make_error_code(errc::conflict));
    }
    auto original = open_with_key("a.key");
    EXPECT_TRUE(original->start());
    // Its secrets still verify and its dedup keys still match.
    EXPECT_EQ(ingest(*original, reg, "msg_legacy_0000000001").status, submit_status::duplicate);
    EXPECT_EQ(ingest(*original, reg, "msg_legacy_0000000002").status, submit_status::accepted);
    auto other = open_with_key("b.key");
    EXPECT_EQ(other->start().error(), make_error_code(errc::conflict));
}

TEST_F(BridgeHostKeyTest, AStoreBoundBeforeDataKeysGetsItsWrapAndKeepsItsDedupKeys) {
    insert_plain_subscription();
    registration_result reg;
    {
        auto first = open_with_key("a.key");
        ASSERT_TRUE(first->start());
        reg = first->register_subscription(webhook_request()).value();
        ASSERT_EQ(ingest(*first, reg, "msg_bound_00000000001").status, submit_status::accepted);
    }
    forget_the_wraps(); // the check value alone, as the release before data keys kept it
    auto other = open_with_key("b.key");
    EXPECT_EQ(other->start().error(), make_error_code(errc::conflict));
    auto original = open_with_key("a.key");
    ASSERT_TRUE(original->start());
    EXPECT_EQ(ingest(*original, reg, "msg_bound_00000000001").status, submit_status::duplicate);
    EXPECT_EQ(open_store()->data_key_wraps()->size(), 1u);
}

// Nodes starting together on a new store with one key file (examples/cluster does): every one
// must open the same data key, whichever binds first and however their reads interleave.
TEST_F(BridgeHostKeyTest, NodesBindingANewStoreTogetherAllOpenTheWinnersDataKey) {
    auto shared = key("a.key");
    for (int round = 0; round < 40; ++round) {
        sqlite_options o;
        o.path = dir_.file("race" + std::to_string(round) + ".db");
        std::vector<std::unique_ptr<store>> nodes;
        for (int i = 0; i < 6; ++i) {
            auto st = open_sqlite_store(o);
            ASSERT_TRUE(st);
            nodes.push_back(std::move(*st));
        }
        std::vector<std::string> opened(nodes.size());
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            threads.emplace_back([&, i] {
                testing::seeded_random random(static_cast<std::uint64_t>(round * 10 + i));
                auto unlocked = unlock_data_key(*nodes[i], shared, random, true);
                if (unlocked && unlocked->verdict == host_key_verdict::matches) {
                    opened[i] = unlocked->data_key->key_check();
                    // What a node does next: seal its config's secrets with the data key. A node
                    // still deciding must not take those for a stranger's (examples/cluster).
                    subscription s;
                    s.id = "sub_" + std::to_string(i);
                    s.tenant = "acme";
                    s.workflow_id = "wf";
                    s.webhook_id = "wh_" + std::to_string(i);
                    s.sealed_secret = unlocked->data_key->seal("whsec_node", random);
                    EXPECT_TRUE(nodes[i]->insert_subscription(s));
                }
            });
        }
        for (auto& t : threads) {
            t.join();
        }
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            EXPECT_FALSE(opened[i].empty()) << "round " << round << ": node " << i << " refused";
            EXPECT_EQ(opened[i], opened[0]) << "round " << round << ": two data keys";
        }
    }
}

TEST_F(BridgeHostKeyTest, ANewStoreGetsADataKeyOfItsOwn) {
    {
        auto first = open_with_key("a.key");
        ASSERT_TRUE(first->start());
    }
    auto st = open_store();
    auto a = key("a.key");
    auto wraps = st->data_key_wraps().value();
    ASSERT_EQ(wraps.size(), 1u);
    auto data_key = a.unwrap(wraps.at(a.key_check()));
    ASSERT_TRUE(data_key);
    EXPECT_NE(data_key->key_check(), a.key_check()) << "the host key must only wrap the data key";
}

TEST_F(BridgeHostKeyTest, ARotatedKeyKeepsSignaturesAndDedupKeysAndRetiresTheOldOne) {
    registration_result reg;
    {
        auto before = open_with_key("a.key");
        ASSERT_TRUE(before->start());
        reg = before->register_subscription(webhook_request()).value();
        ASSERT_EQ(ingest(*before, reg, "msg_rotate_00000000001").status, submit_status::accepted);
    }
    allow_key("a.key", "b.key");
    {
        // Both keys open the store while the nodes move over.
        auto old_node = open_with_key("a.key");
        auto new_node = open_with_key("b.key");
        ASSERT_TRUE(old_node->start());
        ASSERT_TRUE(new_node->start());
        EXPECT_EQ(ingest(*new_node, reg, "msg_rotate_00000000001").status, submit_status::duplicate);
        EXPECT_EQ(ingest(*new_node, reg, "msg_rotate_00000000002").status, submit_status::accepted);
        EXPECT_EQ(ingest(*old_node, reg, "msg_rotate_00000000002").status, submit_status::duplicate);
    }
    {
        auto st = open_store();
        EXPECT_EQ(st->retire_data_key_wraps(key("b.key").key_check()).value(), 1);
    }
    auto old_node = open_with_key("a.key");
    EXPECT_EQ(old_node->start().error(), make_error_code(errc::conflict));
    auto new_node = open_with_key("b.key");
    ASSERT_TRUE(new_node->start());
    EXPECT_EQ(ingest(*new_node, reg, "msg_rotate_00000000001").status, submit_status::duplicate);
    EXPECT_EQ(ingest(*new_node, reg, "msg_rotate_00000000003").status, submit_status::accepted);
}

// serve's pre-start check on a node of a new shared store: the key file is not there yet, and
// another node creates it and binds the store between the check's two reads (the file, then the
// store). The file it finds then is the one every node shares: not a missing key.
class key_made_by_another_node final : public store_forwarder {
public:
    key_made_by_another_node(std::unique_ptr<store> inner, std::function<void(store&)> other)
        : store_forwarder(std::move(inner)), other_(std::move(other)) {}
    result<std::string> host_key_check() override {
        if (other_) {
            std::exchange(other_, {})(*inner_);
        }
        return store_forwarder::host_key_check();
    }

private:
    std::function<void(store&)> other_;
};

TEST_F(BridgeHostKeyTest, AKeyFileAnotherNodeMadeDuringThePreStartCheckIsNotMissing) {
    {
        std::ofstream(dir_.file("wopbridge.yaml"))
            << "store: {sqlite: {path: bridge.db}}\nhostKeyFile: shared.key\n";
    }
    auto loaded = load_config(dir_.file("wopbridge.yaml"));
    ASSERT_TRUE(loaded.value) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
    key_made_by_another_node st(open_store(), [&](store& inner) {
        auto shared = key("shared.key"); // made atomically, as serve makes it
        auto bound = unlock_data_key(inner, shared, random_, true);
        ASSERT_TRUE(bound);
        ASSERT_EQ(bound->verdict, host_key_verdict::matches);
    });
    ASSERT_FALSE(std::filesystem::exists(dir_.file("shared.key")));
    auto refused = check_host_key_against_store(*loaded.value, st);
    EXPECT_FALSE(refused) << refused->to_string();
    // With the file really gone, the sealed store is refused as before.
    std::filesystem::remove(dir_.file("shared.key"));
    auto missing = check_host_key_against_store(*loaded.value, st);
    ASSERT_TRUE(missing);
    EXPECT_THAT(missing->to_string(), HasSubstr("does not exist, but the store was sealed"));
}

} // namespace
} // namespace wopbridge
