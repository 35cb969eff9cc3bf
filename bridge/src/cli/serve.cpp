// `wopbridge serve`: argument and signal handling around one node (node/node.hpp, which assembles
// the process's parts and starts and stops them in order). The main thread waits for signals:
// SIGTERM/SIGINT stop gracefully (nothing acknowledged is lost), SIGHUP re-reads the subscriptions.
#include "app/preflight.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "config/environment_check.hpp"
#include "core/core_dumps.hpp"
#include "core/log.hpp"
#include "core/secret_box.hpp"
#include "node/node.hpp"

#include <boost/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <pthread.h>
#include <signal.h>

namespace wopbridge::cli {
namespace {

bool print_config_errors(const config_load_result& loaded) {
    for (const auto& e : loaded.errors) {
        std::fprintf(stderr, "%s\n", e.to_string().c_str());
    }
    return !loaded.errors.empty();
}

// --listen, else $WOPBRIDGE_LISTEN, else server.listen: examples and a second local bridge pick
// their address without editing the file. A publicUrl the file did not set follows it.
bool apply_listen_override(const arg_parser& p, config& cfg) {
    std::string listen = p.value("listen");
    const char* from = "--listen";
    if (listen.empty()) {
        const char* env = std::getenv("WOPBRIDGE_LISTEN");
        listen = env != nullptr ? env : "";
        from = "WOPBRIDGE_LISTEN";
    }
    if (listen.empty()) {
        return true;
    }
    const std::string scheme = cfg.server.tls ? "https://" : "http://";
    const bool derived_url = cfg.server.public_url == scheme + cfg.server.listen;
    if (!parse_listen(listen, cfg.server.listen_host, cfg.server.listen_port)) {
        std::fprintf(stderr,
                     "wopbridge serve: %s: '%s' is not a valid address (expected host:port, e.g. "
                     "127.0.0.1:8080, [::1]:8080, or 127.0.0.1:0 for any free port)\n",
                     from, listen.c_str());
        return false;
    }
    cfg.server.listen = listen;
    if (derived_url) {
        cfg.server.public_url = scheme + listen;
    }
    return true;
}

// Signals are taken synchronously by the main thread (sigwait); every thread started after this
// inherits the blocked mask, so none of them is interrupted.
sigset_t take_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    // A file-size limit (RLIMIT_FSIZE) reached by a store write must fail that write (EFBIG ->
    // store_unavailable -> 503), not kill the process with SIGXFSZ's default action.
    std::signal(SIGXFSZ, SIG_IGN);
    return signals;
}

// Until SIGTERM or SIGINT; each SIGHUP re-reads the file and applies its subscriptions.
void serve_until_stopped(node& n, const std::string& path, const sigset_t& signals) {
    for (;;) {
        int sig = 0;
        if (sigwait(&signals, &sig) != 0) {
            continue;
        }
        if (sig == SIGHUP) {
            auto again = load_config(path);
            if (print_config_errors(again)) {
                log_line("warn", "wopbridge.reload_refused", {{"reason", "config has errors"}});
                continue;
            }
            auto r = n.reload(*again.value);
            boost::json::object fields{{"subscriptions", again.value->subscriptions.size()}};
            if (!r) {
                fields["error"] = r.error().message;
            }
            log_line(r ? "info" : "warn", r ? "wopbridge.reloaded" : "wopbridge.reload_failed",
                     std::move(fields));
            continue;
        }
        log_line("info", "wopbridge.stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
        break;
    }
}

} // namespace

int run_serve(const std::vector<std::string>& args) {
    arg_parser p(args);
    if (p.flag("help")) {
        std::puts("usage: wopbridge serve --config FILE [--module-path DIR]... [--listen ADDR] [--init]\n"
                  "Runs the bridge. SIGTERM/SIGINT stop it gracefully; SIGHUP (or `wopbridge reload`)\n"
                  "re-reads the subscriptions from FILE. --init: take an empty (0-byte) SQLite file\n"
                  "as a new store instead of refusing it. --listen ADDR (or $WOPBRIDGE_LISTEN): listen\n"
                  "on ADDR (host:port; port 0 = any free port) instead of server.listen.");
        return 0;
    }
    const std::string path = p.value("config");
    if (!p.error.empty() || path.empty()) {
        std::fprintf(stderr, "wopbridge serve: %s\n",
                     p.error.empty() ? "--config FILE is required" : p.error.c_str());
        return 2;
    }

    // Before any secret is read: no core dump of this process carries them, and keys go to the
    // secure heap (excluded from dumps either way).
    const auto core_dumps = apply_core_dump_policy();
    const bool secure_heap = secret_box::use_secure_heap();

    const sigset_t signals = take_signals();

    auto loaded = load_config(path);
    if (print_config_errors(loaded)) {
        return 2;
    }
    config cfg = *loaded.value;
    set_log_level(cfg.logging.level);
    if (!apply_listen_override(p, cfg)) {
        return 2;
    }
    // What check-config refuses, serve refuses, with the same lines (app/preflight).
    auto problems = check_environment(cfg);
    check_connectors(cfg, p.values("module-path"), problems);
    if (!problems.empty()) {
        for (const auto& e : problems) {
            std::fprintf(stderr, "%s\n", e.to_string().c_str());
        }
        return 2;
    }

    node_options no;
    no.cfg = std::move(cfg);
    no.module_dirs = p.values("module-path");
    no.init_empty_store = p.flag("init");
    no.core_dumps = core_dumps.detail;
    no.keys_in_secure_heap = secure_heap;
    node n(std::move(no));
    if (auto r = n.start(); !r) {
        std::fprintf(stderr, "%s\n", r.error().message.c_str());
        return r.error().exit_code;
    }

    serve_until_stopped(n, path, signals);
    n.stop();
    log_line("info", "wopbridge.stopped", {});
    return 0;
}

int run_reload(const std::vector<std::string>& args) {
    arg_parser p(args);
    if (p.flag("help")) {
        std::puts("usage: wopbridge reload --config FILE\n"
                  "Sends SIGHUP to the bridge serving FILE (found through its pid file) so it re-reads\n"
                  "its subscriptions without dropping connections.");
        return 0;
    }
    const std::string path = p.value("config");
    if (path.empty()) {
        std::fputs("wopbridge reload: --config FILE is required\n", stderr);
        return 2;
    }
    auto loaded = load_config(path);
    if (print_config_errors(loaded)) {
        return 2;
    }
    const std::string pid_file = node_pid_file(*loaded.value);
    std::ifstream in(pid_file);
    long pid = 0;
    if (!(in >> pid) || pid <= 1) {
        std::fprintf(stderr, "wopbridge reload: no running bridge (no pid in %s)\n", pid_file.c_str());
        return 1;
    }
    if (::kill(static_cast<pid_t>(pid), SIGHUP) != 0) {
        std::fprintf(stderr, "wopbridge reload: cannot signal pid %ld\n", pid);
        return 1;
    }
    std::printf("reload requested (pid %ld)\n", pid);
    return 0;
}

} // namespace wopbridge::cli
