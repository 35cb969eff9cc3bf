// The SMTP listener's thread lifetime: what it owes the host that unloads the module after
// destroying it.
#include "email/smtp_server.hpp"
#include "support/raw_socket.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace wopbridge::email {
namespace {

using wopbridge::testing::raw_connection;

// Set when a session thread has run its thread-exit destructors, i.e. left the module's code.
std::atomic<int> session_threads_ended{0};

// Lives in each session thread that looked up a recipient. Its destructor runs at thread exit,
// after the session's own code returned, and takes its time: a server that let such a thread run
// on past its own destruction (detached) would be gone before this counts.
struct thread_exit_marker {
    bool armed = false;
    ~thread_exit_marker() {
        if (armed) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            session_threads_ended.fetch_add(1);
        }
    }
};
thread_local thread_exit_marker marker;

TEST(SmtpServerTest, DestructionWaitsUntilEverySessionThreadHasEnded) {
    session_threads_ended = 0;
    constexpr int sessions = 4;
    {
        smtp_server_config config;
        config.port = 0;
        smtp_hooks hooks;
        hooks.recipient_known = [](std::string_view) {
            marker.armed = true;
            return true;
        };
        hooks.has_capacity = [] { return true; };
        hooks.check_auth = [](std::string_view, std::string_view) { return false; };
        smtp_server server(
            config, hooks, [](smtp_envelope&&) { return smtp_session::commit_result::committed; },
            [](int, const std::string&) {});
        ASSERT_EQ(server.start(), "");
        for (int i = 0; i < sessions; ++i) {
            raw_connection c(server.bound_port());
            ASSERT_TRUE(c.connected());
            ASSERT_TRUE(c.send("EHLO c.test\r\nMAIL FROM:<a@example.com>\r\n"
                               "RCPT TO:<in@bridge.test>\r\nQUIT\r\n"));
            ASSERT_TRUE(c.read_until("221", 1, std::chrono::seconds(10))) << c.received();
        }
        EXPECT_TRUE(server.stop(5000));
    }
    EXPECT_EQ(session_threads_ended.load(), sessions);
}

} // namespace
} // namespace wopbridge::email
