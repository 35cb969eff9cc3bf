// The store failing under the real `wopbridge serve`: out of space (a file-size limit of 0 set on
// the running process with prlimit: every file write fails with EFBIG, as on a full disk) and a
// read-only database (the immutable attribute on the database and its WAL: root cannot write them
// either). Ingest answers 503 + Retry-After and never 2xx, nothing is half-written, and service comes
// back by itself when writes are possible again.
#include "support/bridge_reads.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/http_multi.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace wopbridge::testing {
namespace {

constexpr const char* secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* api_key = "hk_store";

// Sets or clears the immutable attribute; false when the file system or privileges do not allow it.
bool set_immutable(const std::string& path, bool on) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    int flags = 0;
    bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok) {
        flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
        ok = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    ::close(fd);
    return ok;
}

bool set_file_size_limit(pid_t pid, rlim_t soft) {
    rlimit old{};
    if (::prlimit(pid, RLIMIT_FSIZE, nullptr, &old) != 0) {
        return false;
    }
    rlimit lim{soft, old.rlim_max};
    return ::prlimit(pid, RLIMIT_FSIZE, &lim, nullptr) == 0;
}

// `sqlite3 FILE "PRAGMA integrity_check"`; "" when the CLI is not installed.
std::string integrity_check(const std::string& db) {
    if (::access("/usr/bin/sqlite3", X_OK) != 0) {
        return "";
    }
    std::string cmd = "/usr/bin/sqlite3 '" + db + "' 'PRAGMA integrity_check' 2>&1";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[256];
        while (std::fgets(buf, sizeof buf, p)) {
            out += buf;
        }
        ::pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
        out.pop_back();
    }
    return out;
}

class StoreFaultsServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << sqlite_serve_prelude(api_key)
            << "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "delivery: {retryPolicy: {baseDelay: 50ms, maxDelay: 200ms}, lease: 2s}\n"
               "subscriptions:\n"
               "  - {id: orders, source: webhook, workflowId: conformance-noop, signingSecret: \""
            << secret << "\"}\n";
    }

    void TearDown() override {
        set_immutable(dir_.file("bridge.db"), false);
        set_immutable(dir_.file("bridge.db-wal"), false);
    }

    http_reply post(const std::string& id) {
        return perform(signed_ingest_call(serve_.url(), "orders", secret, id, R"({"n":1})"));
    }

    // The whole scenario; `fail` / `heal` switch the fault on and off under the running process.
    // `logs_during_fault`: false when the fault also stops the log file from growing (a file-size
    // limit applies to every file the process writes).
    void run_scenario(const std::function<bool()>& fail, const std::function<void()>& heal,
                      bool logs_during_fault) {
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        std::set<std::string> accepted;
        for (int i = 0; i < 5; ++i) {
            std::string id = fresh_webhook_id();
            ASSERT_EQ(post(id).status, 202);
            accepted.insert(id);
        }
        // Let the first deliveries settle so the fault meets intake, not only the engine.
        ASSERT_TRUE(eventually([&] {
            bool ok = false;
            auto rows = read_all_deliveries(serve_.url(), api_key, "orders", ok);
            for (const auto& d : rows) {
                if (d.status != "delivered") {
                    return false;
                }
            }
            return ok && rows.size() == accepted.size();
        }));

        if (!fail()) {
            GTEST_SKIP() << "this file system or these privileges cannot inject the fault";
        }
        // Concurrent ingests while the store cannot write: each one is a 503 with Retry-After.
        std::vector<std::string> refused_ids;
        std::vector<http_call> calls;
        for (int i = 0; i < 40; ++i) {
            refused_ids.push_back(fresh_webhook_id());
            calls.push_back(signed_ingest_call(serve_.url(), "orders", secret, refused_ids.back(),
                                               R"({"n":2})"));
        }
        auto replies = perform_all(calls, 40);
        for (const auto& r : replies) {
            ASSERT_EQ(r.status, 503) << r.body;
            auto retry_after = r.header("retry-after");
            ASSERT_TRUE(retry_after.has_value());
            EXPECT_GE(std::stoi(*retry_after), 1);
        }
        // Not ready while the store cannot write, and said once in the log (no traffic needed).
        http_call readyz;
        readyz.url = serve_.url() + "/readyz";
        EXPECT_EQ(perform(readyz).status, 503);
        if (logs_during_fault) {
            EXPECT_NE(
                read_text_file(dir_.file("serve.log")).find("\"event\":\"store.unavailable\""),
                std::string::npos);
        }
        // The process is still up and reads still work.
        bool ok = false;
        EXPECT_EQ(read_all_deliveries(serve_.url(), api_key, "orders", ok).size(),
                  accepted.size());
        EXPECT_TRUE(ok);

        heal();
        // Readiness comes back by itself (its write probe commits again), before any ingest.
        EXPECT_TRUE(eventually([&] { return perform(readyz).status == 200; },
                               std::chrono::seconds(10)));
        EXPECT_NE(read_text_file(dir_.file("serve.log")).find("\"event\":\"store.recovered\""),
                  std::string::npos);
        // Recovery without a restart: the next ingest is accepted (bounded wait, fresh ids).
        bool recovered = eventually(
            [&] {
                std::string id = fresh_webhook_id();
                auto r = post(id);
                if (r.status == 202) {
                    accepted.insert(id);
                    return true;
                }
                EXPECT_EQ(r.status, 503) << r.body;
                return false;
            },
            std::chrono::seconds(10));
        ASSERT_TRUE(recovered) << read_text_file(dir_.file("serve.log"));

        // Nothing of the refused requests was kept: each is new now, not a duplicate.
        for (const auto& id : refused_ids) {
            auto r = post(id);
            ASSERT_EQ(r.status, 202) << r.body;
            EXPECT_EQ(json_string_field(r.body, "outcome"), "delivered");
            accepted.insert(id);
        }
        std::vector<delivery_row> rows;
        ASSERT_TRUE(eventually([&] {
            bool read_ok = false;
            rows = read_all_deliveries(serve_.url(), api_key, "orders", read_ok);
            for (const auto& d : rows) {
                if (d.status != "delivered") {
                    return false;
                }
            }
            return read_ok && rows.size() == accepted.size();
        })) << rows.size() << " deliveries for " << accepted.size() << " accepted";
        std::set<std::string> keys;
        for (const auto& d : rows) {
            EXPECT_TRUE(keys.insert(d.dedup_key).second);
        }
        serve_.signal(SIGTERM);
        EXPECT_EQ(serve_.wait_exit(), 0);
        const std::string integrity = integrity_check(dir_.file("bridge.db"));
        if (!integrity.empty()) {
            EXPECT_EQ(integrity, "ok");
        }
    }

    temp_dir dir_;
    serve_process serve_;
};

TEST_F(StoreFaultsServeTest, OutOfSpaceAnswersUnavailableAndRecoversWithoutARestart) {
    run_scenario([&] { return set_file_size_limit(serve_.pid(), 0); },
                 [&] { ASSERT_TRUE(set_file_size_limit(serve_.pid(), RLIM_INFINITY)); },
                 false);
}

TEST_F(StoreFaultsServeTest, ReadOnlyDatabaseAnswersUnavailableAndRecoversWithoutARestart) {
    run_scenario(
        [&] {
            return set_immutable(dir_.file("bridge.db"), true) &&
                   set_immutable(dir_.file("bridge.db-wal"), true);
        },
        [&] {
            ASSERT_TRUE(set_immutable(dir_.file("bridge.db-wal"), false));
            ASSERT_TRUE(set_immutable(dir_.file("bridge.db"), false));
        },
        true);
}

} // namespace
} // namespace wopbridge::testing
