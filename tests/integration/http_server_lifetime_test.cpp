// Replies that outlive the server: a handler (in the product, a store thread finishing an intake)
// may hold a request's sink or stream after the server stopped and its io_context is gone. Using
// and dropping them then must do nothing at all; under scripts/sanitize.sh any touch of the freed
// io_context (a timer, a strand) fails these tests.
#include "http/server.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace wopbridge::testing::http_server_lifetime_test {
namespace {

using namespace std::chrono_literals;

// Keeps every sink it is handed, answering none; `/stream` opens a stream first and keeps that.
class keeping_handler final : public http::request_handler {
  public:
    std::size_t body_limit(std::string_view, std::string_view) const override { return 1024; }
    void handle(http::http_request req, std::shared_ptr<http::response_sink> sink) override {
        std::lock_guard lock(mu_);
        if (req.path == "/stream") {
            http::http_response head;
            head.status = 200;
            head.headers.emplace_back("content-type", "text/event-stream");
            streams_.push_back(sink->open_stream(std::move(head)));
            streams_.back()->write("data: first\n\n");
        }
        sinks_.push_back(std::move(sink));
    }
    void begin_shutdown() override {}

    std::size_t held() {
        std::lock_guard lock(mu_);
        return sinks_.size();
    }
    // After the server is gone: answer, write, close and drop everything.
    void answer_and_drop_all() {
        std::lock_guard lock(mu_);
        for (auto& st : streams_) {
            st->write("data: late\n\n");
            st->close();
        }
        for (auto& s : sinks_) {
            http::http_response r;
            r.status = 200;
            r.body = "late";
            s->send(std::move(r));
        }
        streams_.clear();
        sinks_.clear();
    }

  private:
    std::mutex mu_;
    std::vector<std::shared_ptr<http::response_sink>> sinks_;
    std::vector<std::shared_ptr<http::response_stream>> streams_;
};

TEST(HttpServerLifetimeTest, SinksAndStreamsHeldPastTheServerAreInert) {
    keeping_handler handler;
    http::server_options so;
    so.host = "127.0.0.1";
    so.port = 0;
    auto server = std::make_unique<http::server>(so);
    ASSERT_TRUE(server->start(handler).has_value());
    const std::string base = "http://127.0.0.1:" + std::to_string(server->port());

    auto call_to = [&](const std::string& path) {
        http_call c;
        c.url = base + path;
        c.timeout_ms = 10000;
        return c;
    };
    std::thread plain([&] { perform(call_to("/plain")); });
    std::thread streamed([&] {
        perform_streaming(call_to("/stream"), [](const std::string& body) {
            return body.find("late") != std::string::npos;
        });
    });
    ASSERT_TRUE(eventually([&] { return handler.held() == 2; }));

    server->stop(100ms); // the two requests are still unanswered: closed hard at the deadline
    server.reset();      // io_context, strands and timers are gone
    plain.join();
    streamed.join();

    handler.answer_and_drop_all(); // the last copies die here, on this thread
    SUCCEED();
}

} // namespace
} // namespace wopbridge::testing::http_server_lifetime_test
