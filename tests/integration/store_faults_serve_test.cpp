// The store failing under the real `wopbridge serve`: out of space (a file-size limit of 0 set on
// the running process with prlimit: every file write fails with EFBIG, as on a full disk) and a
// read-only database (the immutable attribute on the database and its WAL: root cannot write them
// either). Ingest answers 503 + Retry-After and never 2xx, nothing is half-written, and service comes
// back by itself when writes are possible again. And pages of the database damaged under a running
// node: the damage is named once in the log, and readiness answers 503 as every ingest does, until
// the node is restarted on a repaired file.
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
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace wopbridge::testing::store_faults_serve_test {
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

    // Waits (bounded) until the subscription has `count` deliveries, every one delivered.
    bool all_delivered(std::size_t count) {
        return eventually([&] {
            bool ok = false;
            auto rows = read_all_deliveries(serve_.url(), api_key, "orders", ok);
            for (const auto& d : rows) {
                if (d.status != "delivered") {
                    return false;
                }
            }
            return ok && rows.size() == count;
        });
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
        ASSERT_TRUE(all_delivered(accepted.size()));

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

// The review's case: store pages damaged under a running node. The test waits until the node has
// checkpointed and truncated its WAL (so every page is read from the database file), then
// overwrites everything past the first page. The first statement that reads a damaged page names
// it: one store.damaged line with SQLite's own words, no store.recovered after it, /readyz 503 on
// every probe (a load balancer stops sending traffic), every ingest 503 with Retry-After, and
// nothing more written into the file.
TEST_F(StoreFaultsServeTest, PagesDamagedUnderARunningNodeAreNamedOnceAndReadinessStaysUnready) {
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;
    for (int i = 0; i < 50; ++i) {
        ASSERT_EQ(post(fresh_webhook_id()).status, 202);
    }
    ASSERT_TRUE(all_delivered(50));
    const std::string db = dir_.file("bridge.db");
    ASSERT_TRUE(eventually(
        [&] {
            struct stat st {};
            return ::stat((db + "-wal").c_str(), &st) == 0 && st.st_size == 0;
        },
        std::chrono::seconds(30)))
        << "the idle node never truncated its WAL";
    {
        // The page size is the header's big-endian u16 at offset 16 (1 means 65536).
        std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
        ASSERT_TRUE(f.good());
        unsigned char header[18] = {};
        f.read(reinterpret_cast<char*>(header), sizeof header);
        std::size_t page = (static_cast<std::size_t>(header[16]) << 8) | header[17];
        page = page == 1 ? 65536 : page;
        f.seekg(0, std::ios::end);
        const auto size = static_cast<std::size_t>(f.tellg());
        ASSERT_GT(size, 2 * page);
        std::string garbage(size - page, '\0');
        for (std::size_t i = 0; i < garbage.size(); ++i) {
            garbage[i] = static_cast<char>(0xA5 ^ (i * 31));
        }
        f.seekp(static_cast<std::streamoff>(page));
        f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
        f.flush();
        ASSERT_TRUE(f.good());
    }
    http_call readyz;
    readyz.url = serve_.url() + "/readyz";
    // A commit changes the WAL, so the next read starts from the file: the damage is met.
    ASSERT_TRUE(eventually(
        [&] {
            post(fresh_webhook_id());
            bool ok = false;
            read_all_deliveries(serve_.url(), api_key, "orders", ok);
            return perform(readyz).status == 503;
        },
        std::chrono::seconds(15)))
        << read_text_file(dir_.file("serve.log"));
    for (int i = 0; i < 24; ++i) {
        EXPECT_EQ(perform(readyz).status, 503);
        auto r = post(fresh_webhook_id());
        EXPECT_EQ(r.status, 503) << r.body;
        EXPECT_TRUE(r.header("retry-after").has_value());
    }
    const std::string log = read_text_file(dir_.file("serve.log"));
    const auto first = log.find("\"event\":\"store.damaged\"");
    ASSERT_NE(first, std::string::npos) << log;
    EXPECT_EQ(log.find("\"event\":\"store.damaged\"", first + 1), std::string::npos)
        << "said more than once";
    EXPECT_NE(log.find("malformed", first), std::string::npos) << log.substr(first, 600);
    EXPECT_EQ(log.find("\"event\":\"store.recovered\"", first), std::string::npos)
        << "readiness flapped";
    serve_.signal(SIGTERM);
    EXPECT_EQ(serve_.wait_exit(), 0);
}

} // namespace
} // namespace wopbridge::testing::store_faults_serve_test
