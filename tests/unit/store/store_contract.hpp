#pragma once
// The store contract's fixture, shared by its files (store_contract_*_test.cpp): every backend
// (SQLite, PostgreSQL) runs every test. A backend joins by adding a store_backend to the
// INSTANTIATE_TEST_SUITE_P list in store_contract_test.cpp. A named namespace, so that the
// fixture is one type in every file (one instantiation covers the tests of all of them).
#include "store/store.hpp"
#include "support/eventually.hpp"
#include "support/fake_clock.hpp"
#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace wopbridge::store_contract {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using testing::temp_dir;

using testing::t0;
constexpr auto wait_limit = std::chrono::seconds(30);

struct store_backend {
    std::string name;
    // Opens (or reopens: same data) the store kept in `dir`.
    std::function<result<std::unique_ptr<store>, error_info>(const temp_dir&)> open;
    // Makes the stored data read-only at the storage level and opens it again.
    std::function<result<std::unique_ptr<store>, error_info>(const temp_dir&)> open_read_only;
    // Non-empty: why this backend cannot run here (its tests skip).
    std::function<std::string()> unavailable = [] { return std::string{}; };
};

inline std::ostream& operator<<(std::ostream& os, const store_backend& b) {
    return os << b.name;
}

inline store_backend sqlite_backend() {
    store_backend b;
    b.name = "sqlite";
    b.open = [](const temp_dir& dir) {
        return open_sqlite_store(sqlite_options{dir.file("bridge.db")});
    };
    b.open_read_only = [](const temp_dir& dir) -> result<std::unique_ptr<store>, error_info> {
        std::string path = dir.file("bridge.db");
        std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                               std::filesystem::perms::group_read |
                                               std::filesystem::perms::others_read);
        // root ignores file modes; asking SQLite for a read-only handle gives the same failure.
        if (::geteuid() == 0) {
            path = "file:" + path + "?mode=ro";
        }
        return open_sqlite_store(sqlite_options{path});
    };
    return b;
}

// PostgreSQL: one server per test binary run; each test's temp dir maps to a fresh database, so a
// reopen (same dir) sees the same data.
inline std::string postgres_database_for(const temp_dir& dir) {
    static std::mutex mu;
    static std::map<std::string, std::string> databases;
    std::lock_guard lock(mu);
    auto& name = databases[dir.path().string()];
    if (name.empty()) {
        name = testing::postgres_server::shared()->create_database();
    }
    return name;
}

inline store_backend postgres_backend() {
    store_backend b;
    b.name = "postgres";
    b.open = [](const temp_dir& dir) -> result<std::unique_ptr<store>, error_info> {
        auto* server = testing::postgres_server::shared();
        auto s = open_postgres_store(postgres_options{server->url(postgres_database_for(dir))});
        EXPECT_TRUE(s) << s.error().message;
        return s;
    };
    b.open_read_only = [](const temp_dir& dir) -> result<std::unique_ptr<store>, error_info> {
        auto* server = testing::postgres_server::shared();
        const std::string db = postgres_database_for(dir);
        // New sessions of this database can no longer write: the server-side read-only mode.
        EXPECT_TRUE(server->sql("postgres", "ALTER DATABASE " + db +
                                                " SET default_transaction_read_only = on"));
        return open_postgres_store(postgres_options{server->url(db)});
    };
    b.unavailable = [] {
        return testing::postgres_server::shared() == nullptr
                   ? testing::postgres_server::shared_unavailable_reason()
                   : std::string{};
    };
    return b;
}

class completion_counter {
  public:
    void done() {
        std::lock_guard lock(mu_);
        ++count_;
        cv_.notify_all();
    }
    bool wait_for(int n) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, wait_limit, [&] { return count_ >= n; });
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    int count_ = 0;
};

class StoreContractTest : public ::testing::TestWithParam<store_backend> {
  protected:
    void SetUp() override {
        if (auto why = GetParam().unavailable(); !why.empty()) {
            GTEST_SKIP() << GetParam().name << " backend unavailable: " << why;
        }
        open();
    }

    void open() {
        store_.reset();
        auto s = GetParam().open(dir_);
        ASSERT_TRUE(s) << s.error().message;
        store_ = std::move(*s);
    }

    static subscription make_subscription(const std::string& id,
                                          sub_state state = sub_state::active) {
        subscription s;
        s.id = id;
        s.tenant = "acme";
        s.state = state;
        s.workflow_id = "wf_orders";
        s.webhook_id = "wh_" + id;
        s.secret_fingerprint = "fp-0123456789abcdef";
        s.sealed_secret = "sealed:AAAA";
        s.created_at = t0;
        s.updated_at = t0;
        return s;
    }

    void add_subscription(const std::string& id, sub_state state = sub_state::active) {
        ASSERT_TRUE(store_->insert_subscription(make_subscription(id, state)));
    }

    static intake_request make_intake(const std::string& sub, const std::string& key,
                                      const std::string& suffix, millis at = t0) {
        intake_request r;
        r.subscription_id = sub;
        r.tenant = "acme";
        r.dedup_key = key;
        r.delivery_id = "dlv_" + suffix;
        r.run_id = "run_" + suffix;
        r.received_at = at;
        r.due_at = at;
        r.content_json = R"({"body":"secret content )" + suffix + R"("})";
        r.dedup_expires_at = at + 24 * 3600 * 1000;
        return r;
    }

    intake_outcome must_intake(intake_request r) {
        auto out = store_->intake_sync(std::move(r));
        EXPECT_TRUE(out) << out.error().message();
        return out ? *out : intake_outcome{};
    }

    static attempt_record base_record(const delivery& d, int attempt, attempt_outcome outcome,
                                      millis at) {
        attempt_record rec;
        rec.delivery_id = d.id;
        rec.subscription_id = d.subscription_id;
        rec.at = at;
        rec.attempt = {d.subscription_id, d.dedup_key, attempt, outcome, {}};
        rec.attempt_event_id = "evt_att_" + d.id + "_" + std::to_string(attempt);
        return rec;
    }

    static attempt_record delivered_record(const delivery& d, int attempt, millis at) {
        auto rec = base_record(d, attempt, attempt_outcome::delivered, at);
        rec.attempt.run_id = d.run_id;
        rec.run = run_record{
            d.run_id, d.tenant, "wf_orders", d.subscription_id, d.id, run_status::running,
            "",       at,       at};
        rec.run_started_event_id = "evt_start_" + d.id;
        rec.run_started_payload_json = R"({"workflowId":"wf_orders"})";
        return rec;
    }

    std::vector<delivery> claim(millis now, int limit = 100, millis lease = 60000) {
        auto c = store_->claim_due(now, limit, lease);
        EXPECT_TRUE(c) << c.error().message();
        return c ? *c : std::vector<delivery>{};
    }

    static std::vector<std::string> ids(const std::vector<delivery>& ds) {
        std::vector<std::string> out;
        for (const auto& d : ds) {
            out.push_back(d.id);
        }
        return out;
    }

    static boost::json::value json(const std::string& text) { return boost::json::parse(text); }

    temp_dir dir_;
    std::unique_ptr<store> store_;
};

} // namespace wopbridge::store_contract
