// A store whose index no longer matches its table (the review's damaged index page: quick_check
// ok, integrity_check not) through the real program: `check-config` and `serve` refuse it with the
// same line, `check-store` lists what is wrong, and `startupCheck: quick` is the operator's
// documented trade (it starts on it). The index is damaged through SQLite (support/store_damage).
#include "support/bridge_reads.hpp"
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/store_damage.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <string>

namespace wopbridge::testing::store_check_serve_test {
namespace {

using ::testing::HasSubstr;

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

long long count_rows(const std::string& db, const char* sql) {
    sqlite3* h = nullptr;
    long long n = -1;
    if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            n = sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return n;
}

class StoreCheckServeTest : public ::testing::Test {
  protected:
    std::string write_config(const std::string& sqlite_extra = "") {
        const std::string path = dir_.file("wopbridge.yaml");
        std::ofstream(path) << "server: {listen: \"127.0.0.1:0\"}\n"
                               "store: {sqlite: {path: bridge.db"
                            << sqlite_extra
                            << "}}\n"
                               "hostKeyFile: host.key\n"
                               "subscriptions:\n"
                               "  - {id: orders, source: webhook, workflowId: wf, signingSecret: \""
                            << secret
                            << "\"}\n"
                               "runs: {local: {workflows: [{id: wf}]}}\n";
        return path;
    }

    // Ten acknowledged events whose runs finished (deliveries, dedup, runs and run events written).
    void serve_events(const std::string& config) {
        serve_process p;
        ASSERT_TRUE(p.start(config, dir_.file("serve.log"))) << p.error;
        for (int i = 0; i < 10; ++i) {
            auto r = perform(
                signed_ingest_call(p.url(), "orders", secret, fresh_webhook_id(), R"({"n":1})"));
            ASSERT_EQ(r.status, 202) << r.body;
        }
        ASSERT_TRUE(eventually(
            [&] {
                return count_rows(db(), "SELECT COUNT(*) FROM runs WHERE status = 'completed'") ==
                       10;
            },
            std::chrono::seconds(60)));
        p.signal(SIGTERM);
        ASSERT_EQ(p.wait_exit(), 0);
    }

    std::string db() const { return dir_.file("bridge.db"); }

    temp_dir dir_;
};

TEST_F(StoreCheckServeTest, ADuplicateInAUniqueIndexIsRefusedAtStartAndListedByCheckStore) {
    auto config = write_config();
    serve_events(config);
    ASSERT_EQ(duplicate_a_run_event_id(db()), "");

    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 60, {}, true);
    EXPECT_EQ(checked.exit_code, 2) << checked.stdout_text;
    const std::string line = first_line(checked.stdout_text);
    EXPECT_THAT(line, HasSubstr(config + ": store: cannot open the sqlite store: " + db() +
                                " is damaged (integrity_check: "));
    EXPECT_THAT(line, HasSubstr("run_events_by_event_id"));
    EXPECT_THAT(line, HasSubstr("wopbridge check-store"));
    auto served = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 60, {}, true);
    EXPECT_EQ(served.exit_code, 1) << served.stdout_text;
    EXPECT_EQ(first_line(served.stdout_text), line);

    auto listed = run_program({WOPBRIDGE_PROGRAM, "check-store", "--config", config}, 60, {}, true);
    EXPECT_EQ(listed.exit_code, 1) << listed.stdout_text;
    EXPECT_THAT(listed.stdout_text, HasSubstr("non-unique entry in index run_events_by_event_id"));
    EXPECT_THAT(listed.stdout_text, HasSubstr("finding(s) (integrity_check, "));
    auto quick = run_program({WOPBRIDGE_PROGRAM, "check-store", "--config", config, "--quick"}, 60,
                             {}, true);
    EXPECT_EQ(quick.exit_code, 0) << quick.stdout_text;
    EXPECT_THAT(quick.stdout_text, HasSubstr(": ok (quick_check, "));
}

TEST_F(StoreCheckServeTest, AnIndexMissingRowsIsRefusedUnlessTheOperatorChoseTheQuickCheck) {
    serve_events(write_config());
    ASSERT_EQ(empty_an_index(db(), "deliveries_by_subscription"), "");

    auto config = write_config();
    auto served = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 60, {}, true);
    EXPECT_EQ(served.exit_code, 1) << served.stdout_text;
    EXPECT_THAT(first_line(served.stdout_text),
                HasSubstr("missing from index deliveries_by_subscription"));

    // The quick check is the documented trade: pages only, so this file is served.
    config = write_config(", startupCheck: quick");
    EXPECT_EQ(run_program({WOPBRIDGE_PROGRAM, "check-config", config}).exit_code, 0);
    serve_process p;
    ASSERT_TRUE(p.start(config, dir_.file("quick.log"))) << p.error;
    // check-store reads beside the serving node and still finds it.
    auto listed = run_program({WOPBRIDGE_PROGRAM, "check-store", "--config", config}, 60, {}, true);
    EXPECT_EQ(listed.exit_code, 1) << listed.stdout_text;
    EXPECT_THAT(listed.stdout_text,
                HasSubstr("missing from index deliveries_by_subscription"));
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
}

TEST_F(StoreCheckServeTest, CheckStoreSaysOkOnAnIntactStoreAndRefusesBadUsage) {
    auto config = write_config();
    serve_events(config);
    auto ok = run_program({WOPBRIDGE_PROGRAM, "check-store", "--config", config}, 60, {}, true);
    EXPECT_EQ(ok.exit_code, 0) << ok.stdout_text;
    EXPECT_THAT(ok.stdout_text, HasSubstr(db() + ": ok (integrity_check, "));
    EXPECT_EQ(run_program({WOPBRIDGE_PROGRAM, "check-store", "--help"}).exit_code, 0);
    EXPECT_EQ(run_program({WOPBRIDGE_PROGRAM, "check-store"}).exit_code, 2);
    EXPECT_EQ(
        run_program({WOPBRIDGE_PROGRAM, "check-store", "--config", config, "--max-findings", "0"})
            .exit_code,
        2);
    auto bad = write_config(", startupCheck: sometimes");
    auto refused = run_program({WOPBRIDGE_PROGRAM, "check-config", bad}, 30, {}, true);
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_THAT(first_line(refused.stdout_text),
                HasSubstr("store.sqlite.startupCheck: expected integrity"));
}

} // namespace
} // namespace wopbridge::testing::store_check_serve_test
