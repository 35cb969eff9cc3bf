// A corpus of configurations that cannot serve correctly (issue 16): `check-config` and `serve`
// both refuse each one, exit 2, with the same first line: file:line:col, the key, and the fix.
// The cases need the real filesystem (modes, sizes, a store bound to another host key), so they
// run the real program on files in a temp dir.
#include "support/bridge_reads.hpp"
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"
#include "support/webhook_signer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <sys/stat.h>

namespace wopbridge::testing::refused_configs_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void write_key(const std::string& path, std::size_t size, char fill, mode_t mode) {
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << std::string(size, fill);
    }
    ::chmod(path.c_str(), mode);
}

class RefusedConfigsTest : public ::testing::Test {
protected:
    // The config under test: the usual prelude with `host_key_line` in place of hostKeyFile.
    std::string write_config(const std::string& host_key_line, const std::string& store_line) {
        const std::string path = dir_.file("wopbridge.yaml");
        std::ofstream(path) << "server: {listen: \"127.0.0.1:0\"}\n"
                               "auth:\n"
                               "  apiKeys:\n"
                               "    - {key: hk_refused, tenant: default, scopes: [runs:read]}\n"
                            << store_line << "\n"
                            << host_key_line << "\n"
                            << "subscriptions:\n"
                               "  - {id: orders, source: webhook, workflowId: wf, signingSecret: "
                               "\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"}\n"
                               "runs: {local: {workflows: [{id: wf}]}}\n";
        return path;
    }

    // Both commands refuse `config` with exit 2 and the same first line, which has `expected`.
    void expect_both_refuse(const std::string& config, const std::string& expected) {
        auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 30, {}, true);
        EXPECT_EQ(checked.exit_code, 2) << checked.stdout_text;
        const std::string check_line = first_line(checked.stdout_text);
        EXPECT_THAT(check_line, HasSubstr(expected));
        EXPECT_THAT(check_line, ::testing::StartsWith(config + ":"));

        auto served = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 30, {}, true);
        EXPECT_EQ(served.exit_code, 2) << served.stdout_text;
        EXPECT_EQ(first_line(served.stdout_text), check_line);
    }

    // A config with module hello's instance hello-1 and `subscriptions` (its list items).
    std::string write_hello_config(const std::string& subscriptions) {
        const std::string path = dir_.file("wopbridge.yaml");
        std::ofstream(path) << "server: {listen: \"127.0.0.1:0\"}\n"
                               "store: {sqlite: {path: bridge.db}}\n"
                               "hostKeyFile: host.key\n"
                               "runs: {local: {workflows: [{id: wf}]}}\n"
                               "connectors:\n"
                               "  - {name: hello-1, module: hello}\n"
                               "subscriptions:\n"
                            << subscriptions;
        return path;
    }

    // Serves `config` once and stops it, leaving a store bound to its host key.
    void serve_once(const std::string& config) {
        serve_process p;
        ASSERT_TRUE(p.start(config, dir_.file("serve.log"))) << p.error;
        p.signal(SIGTERM);
        ASSERT_EQ(p.wait_exit(), 0);
    }

    temp_dir dir_;
    const std::string sqlite_line = "store: {sqlite: {path: bridge.db}}";
};

TEST_F(RefusedConfigsTest, AHostKeyReadableByOthersIsRefusedWithTheChmodFix) {
    write_key(dir_.file("host.key"), 32, 'k', 0644);
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    expect_both_refuse(config, ":6:14: hostKeyFile: " + dir_.file("host.key") +
                                   " is accessible to group or others (mode 0644), which defeats "
                                   "sealing: chmod 600 " + dir_.file("host.key"));
}

TEST_F(RefusedConfigsTest, AHostKeyOfTheWrongSizeIsRefused) {
    write_key(dir_.file("host.key"), 10, 'k', 0600);
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    expect_both_refuse(config, ":6:14: hostKeyFile: " + dir_.file("host.key") + " is 10 bytes");
}

TEST_F(RefusedConfigsTest, AHostKeyUnderAFileIsRefused) {
    std::ofstream(dir_.file("plain")) << "not a folder\n";
    auto config = write_config("hostKeyFile: plain/keys/host.key", sqlite_line);
    expect_both_refuse(config, ":6:14: hostKeyFile: " + dir_.file("plain/keys/host.key") +
                                   " cannot be created: " + dir_.file("plain") + " is not a folder");
}

TEST_F(RefusedConfigsTest, ADatabaseUnderAFileIsRefused) {
    std::ofstream(dir_.file("plain")) << "not a folder\n";
    auto config = write_config("hostKeyFile: host.key", "store: {sqlite: {path: plain/db/bridge.db}}");
    expect_both_refuse(config, ":5:24: store.sqlite.path: " + dir_.file("plain/db/bridge.db") +
                                   " cannot be created (" + dir_.file("plain") + " is not a folder)");
}

TEST_F(RefusedConfigsTest, AReplacedHostKeyIsRefusedAndTheOriginalServesAgain) {
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    serve_once(config);
    const std::string original = read_text_file(dir_.file("host.key"));
    ASSERT_EQ(original.size(), 32u);
    write_key(dir_.file("host.key"), 32, 'x', 0600);
    expect_both_refuse(config, ":6:14: hostKeyFile: the host key in " + dir_.file("host.key") +
                                   " is not a key this store opens with");
    // Restoring the key is the fix.
    {
        std::ofstream(dir_.file("host.key"), std::ios::binary | std::ios::trunc) << original;
    }
    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 30, {}, true);
    EXPECT_EQ(checked.exit_code, 0) << checked.stdout_text;
    serve_once(config);
}

// `wopbridge host-key` on SQLite: a key the store does not know cannot add another or retire the
// others; the in-place replacement of the key file (the other way to move nodes) is then served.
TEST_F(RefusedConfigsTest, HostKeyRotationRefusesUnknownKeysAndServesTheNewKeyInPlace) {
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    serve_once(config);
    auto same = run_program({WOPBRIDGE_PROGRAM, "host-key", "add", "--config", config, "--key-file",
                             dir_.file("host.key")},
                            30, {}, true);
    EXPECT_EQ(same.exit_code, 2) << same.stdout_text;
    EXPECT_THAT(same.stdout_text, HasSubstr("is the key in use; give a new file"));

    write_key(dir_.file("stranger.key"), 32, 's', 0600);
    auto stranger_config = write_config("hostKeyFile: stranger.key", sqlite_line);
    for (const char* verb : {"add", "retire"}) {
        auto refused = run_program({WOPBRIDGE_PROGRAM, "host-key", verb, "--config",
                                    stranger_config, "--key-file", dir_.file("next.key")},
                                   30, {}, true);
        EXPECT_EQ(refused.exit_code, 2) << verb << ": " << refused.stdout_text;
        EXPECT_THAT(refused.stdout_text, HasSubstr("hostKeyFile: the host key in " +
                                                   dir_.file("stranger.key") +
                                                   " is not a key this store opens with"));
    }
    EXPECT_FALSE(fs::exists(dir_.file("next.key")));

    config = write_config("hostKeyFile: host.key", sqlite_line);
    auto added = run_program({WOPBRIDGE_PROGRAM, "host-key", "add", "--config", config, "--key-file",
                              dir_.file("next.key")},
                             30, {}, true);
    ASSERT_EQ(added.exit_code, 0) << added.stdout_text;
    fs::rename(dir_.file("next.key"), dir_.file("host.key")); // the new key in the old one's place
    auto retired = run_program({WOPBRIDGE_PROGRAM, "host-key", "retire", "--config", config}, 30,
                               {}, true);
    ASSERT_EQ(retired.exit_code, 0) << retired.stdout_text;
    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 30, {}, true);
    EXPECT_EQ(checked.exit_code, 0) << checked.stdout_text;
    serve_once(config);
}

TEST_F(RefusedConfigsTest, AMissingHostKeyOfABoundStoreIsRefusedBeforeANewOneIsMade) {
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    serve_once(config);
    fs::remove(dir_.file("host.key"));
    expect_both_refuse(config, ":6:14: hostKeyFile: " + dir_.file("host.key") +
                                   " does not exist, but the store was sealed with a host key");
    EXPECT_FALSE(fs::exists(dir_.file("host.key"))); // serve did not create a new one
}

TEST_F(RefusedConfigsTest, TheDefaultHostKeyIsNamedAsTheDefault) {
    std::ofstream(dir_.file("var")) << "a file where the default key's folder would be\n";
    auto config = write_config("", sqlite_line);
    expect_both_refuse(config, ": hostKeyFile (not set: the default): " + dir_.file("var/host.key") +
                                   " cannot be created: " + dir_.file("var") + " is not a folder");
}

// A store that is there but cannot be trusted: check-config exits 2, serve 1 (nothing is served),
// both with the same line.
TEST_F(RefusedConfigsTest, AnEmptyDatabaseFileIsRefusedUntilServeInit) {
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    { std::ofstream(dir_.file("bridge.db"), std::ios::trunc); }
    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 30, {}, true);
    EXPECT_EQ(checked.exit_code, 2) << checked.stdout_text;
    const std::string line = first_line(checked.stdout_text);
    EXPECT_THAT(line, HasSubstr(config + ": store: cannot open the sqlite store: " +
                                dir_.file("bridge.db") + " is empty (0 bytes)"));
    auto served = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 30, {}, true);
    EXPECT_EQ(served.exit_code, 1) << served.stdout_text;
    EXPECT_EQ(first_line(served.stdout_text), line);

    serve_process p;
    p.extra_args = {"--init"};
    ASSERT_TRUE(p.start(config, dir_.file("init.log"))) << p.error;
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
    EXPECT_EQ(run_program({WOPBRIDGE_PROGRAM, "check-config", config}).exit_code, 0);
}

TEST_F(RefusedConfigsTest, ADamagedDatabaseIsRefusedAndNotServed) {
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    serve_once(config);
    {
        // Flip bytes through the middle of the file (past the header page).
        std::fstream f(dir_.file("bridge.db"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(0, std::ios::end);
        const auto size = static_cast<long long>(f.tellg());
        ASSERT_GT(size, 8192);
        for (long long at = 4096 + 100; at < size; at += 997) {
            f.seekp(at);
            f.put('\xA5');
        }
    }
    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 30, {}, true);
    EXPECT_EQ(checked.exit_code, 2) << checked.stdout_text;
    const std::string line = first_line(checked.stdout_text);
    EXPECT_THAT(line, HasSubstr(config + ": store: cannot open the sqlite store: "));
    EXPECT_THAT(line, ::testing::AnyOf(HasSubstr("is damaged (integrity_check: "),
                                       HasSubstr("malformed")));
    auto served = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 30, {}, true);
    EXPECT_EQ(served.exit_code, 1) << served.stdout_text;
    EXPECT_EQ(first_line(served.stdout_text), line);
}

// The review's case: after a SIGKILL, one byte changed in the first frame of the WAL. SQLite's
// recovery would stop there and silently drop every acknowledged event after it (and their
// re-posts would be taken as new). Both commands refuse the store before SQLite opens it, naming
// the frame, the count and the fix; the WAL is left as it is.
TEST_F(RefusedConfigsTest, ADamagedWalFrameWithAcknowledgedEventsAfterItIsRefused) {
    auto config = write_config("hostKeyFile: host.key", sqlite_line);
    serve_process p;
    ASSERT_TRUE(p.start(config, dir_.file("serve.log"))) << p.error;
    for (int i = 0; i < 40; ++i) { // within the per-address budget (50/s)
        auto r = perform(signed_ingest_call(p.url(), "orders",
                                            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                            fresh_webhook_id(), R"({"n":1})"));
        ASSERT_EQ(r.status, 202) << r.body;
    }
    p.signal(SIGKILL);
    ASSERT_EQ(p.wait_exit(), -1);
    const std::string wal = dir_.file("bridge.db-wal");
    ASSERT_TRUE(fs::exists(wal));
    // The kill came right after the last commit: an idle second passes before the WAL is
    // truncated.
    ASSERT_GT(fs::file_size(wal), 32u + 24u + 4096u);
    {
        std::fstream f(wal, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(32 + 24 + 100); // inside the first frame's page
        char c = 0;
        f.get(c);
        f.seekp(32 + 24 + 100);
        f.put(static_cast<char>(c ^ 0x01));
    }
    const auto size = fs::file_size(wal);
    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", config}, 30, {}, true);
    EXPECT_EQ(checked.exit_code, 2) << checked.stdout_text;
    const std::string line = first_line(checked.stdout_text);
    EXPECT_THAT(line, HasSubstr(config + ": store: cannot open the sqlite store: " +
                                dir_.file("bridge.db") + "-wal is damaged: frame 1 of "));
    EXPECT_THAT(line, HasSubstr("committed transaction(s) after it"));
    EXPECT_THAT(line, HasSubstr("restore the database from a backup"));
    auto served = run_program({WOPBRIDGE_PROGRAM, "serve", "--config", config}, 30, {}, true);
    EXPECT_EQ(served.exit_code, 1) << served.stdout_text;
    EXPECT_EQ(first_line(served.stdout_text), line);
    EXPECT_EQ(fs::file_size(wal), size);
}

TEST_F(RefusedConfigsTest, ConnectorSettingsOutsideTheModulesSchemaAreRefusedTheSameWay) {
    auto config = write_config("hostKeyFile: host.key\n"
                               "connectors:\n"
                               "  - {name: hello-1, module: hello, settings: {greting: hi}}",
                               sqlite_line);
    // At the key the schema does not declare, with the fix.
    expect_both_refuse(config, ":8:47: connectors: settings of connector instance 'hello-1' do not "
                               "match module hello's config schema: /greting");
    expect_both_refuse(config, "; fix: remove connectors[0].settings.greting (module hello's "
                               "schema does not declare it)");
}

TEST_F(RefusedConfigsTest, SubscriptionSettingsOutsideTheModulesSchemaAreRefusedTheSameWay) {
    const std::string path =
        write_hello_config("  - {id: demo, source: webhook, connector: hello-1, workflowId: wf, "
                           "settings: {secret: short}}\n");
    // At the offending value (no longer at its subscription's entry), with the fix.
    expect_both_refuse(path, ":8:88: subscriptions: settings of subscription demo do not match "
                             "module hello's subscription schema: /secret");
    expect_both_refuse(path, "; fix: change subscriptions[0].settings.secret to a value module "
                             "hello's schema allows");
}

TEST_F(RefusedConfigsTest, SettingsOutsideTheSchemaAreRefusedAtTheirLineWithoutTheirValue) {
    const std::string canary = "canary-15-chars"; // one short of the schema's minLength
    const std::string path =
        write_hello_config("  - {id: fine, source: webhook, connector: hello-1, workflowId: wf}\n"
                           "  - id: demo\n"
                           "    source: webhook\n"
                           "    connector: hello-1\n"
                           "    workflowId: wf\n"
                           "    settings:\n"
                           "      secret: \"" +
                           canary + "\"\n");
    expect_both_refuse(path, ":14:15: subscriptions: settings of subscription demo do not match "
                             "module hello's subscription schema: /secret: ");
    expect_both_refuse(path, "fix: change subscriptions[1].settings.secret to a value");
    auto checked = run_program({WOPBRIDGE_PROGRAM, "check-config", path}, 30, {}, true);
    EXPECT_EQ(checked.stdout_text.find(canary), std::string::npos) << checked.stdout_text;
}

TEST_F(RefusedConfigsTest, ASyntaxErrorIsRefusedTheSameWay) {
    auto config = write_config("hostKeyFile: host.key\nlogging: {levl: info}", sqlite_line);
    expect_both_refuse(config, ":7:11: logging: unknown key 'levl' (did you mean 'level'?)");
}

} // namespace
} // namespace wopbridge::testing::refused_configs_test
