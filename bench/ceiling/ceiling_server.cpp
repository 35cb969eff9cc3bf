// bench-ceiling: the HTTP ceiling of this machine. The same Beast server wopbridge serves with
// (bridge/src/http/server.cpp: same sessions, parser, timeouts, thread count), answering every
// request with the same 202 body shape as an accepted ingest, and doing nothing else: no signature
// check, no store, no fsync. Whatever rate the bridge reaches is measured against this one.
//
//   bench-ceiling [--threads N]     prints {"port":N} on stdout once listening; SIGTERM/SIGINT stop it

#include "http/server.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

class accept_everything final : public wopbridge::http::request_handler {
public:
    std::size_t body_limit(std::string_view, std::string_view) const override { return 1 << 20; }
    void handle(wopbridge::http::http_request,
                std::shared_ptr<wopbridge::http::response_sink> sink) override {
        sink->send(wopbridge::http::http_response::json(
            202, R"({"outcome":"delivered","runId":"run_00000000000000000000000000","deliveryId":)"
                 R"("dlv_00000000000000000000000000"})"));
    }
    void begin_shutdown() override {}
};

} // namespace

int main(int argc, char** argv) {
    wopbridge::http::server_options so;
    so.host = "127.0.0.1";
    so.port = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--threads") {
            so.threads = std::atoi(argv[i + 1]);
        }
    }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr); // before the server's threads start

    accept_everything handler;
    wopbridge::http::server srv(so);
    if (auto r = srv.start(handler); !r) {
        std::fprintf(stderr, "bench-ceiling: cannot listen\n");
        return 1;
    }
    std::printf("{\"port\":%u}\n", static_cast<unsigned>(srv.port()));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    srv.stop(std::chrono::milliseconds(2000));
    return 0;
}
