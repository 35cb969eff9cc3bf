// `wopbridge serve`: the composition root. Config -> store -> run starter -> bridge -> connector host
// -> HTTP server; then the main thread waits for signals: SIGTERM/SIGINT stop gracefully (nothing
// acknowledged is lost), SIGHUP re-reads the subscriptions.
#include "app/bridge.hpp"
#include "app/preflight.hpp"
#include "config/environment_check.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/blob_store.hpp"
#include "core/core_dumps.hpp"
#include "core/secret_box.hpp"
#include "core/log.hpp"
#include "http/api.hpp"
#include "app/bridge_api.hpp"
#include "http/server.hpp"
#include "plugins/connector_host.hpp"
#include "plugins/connector_metrics.hpp"
#include "plugins/connector_sync.hpp"
#include "plugins/submit_sink.hpp"
#include "store/store.hpp"

#include <boost/json.hpp>

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <set>
#include <signal.h>
#include <unistd.h>

namespace wopbridge::cli {
namespace {

std::string pid_file_for(const config& c) {
    // SQLite: beside the database (one bridge per file). PostgreSQL: several nodes may share a
    // config directory, so the pid file is named after the config file.
    if (c.store.backend == store_config::backend_kind::sqlite) {
        return (std::filesystem::path(c.store.sqlite_path).parent_path() / "wopbridge.pid").string();
    }
    return (c.base_dir / (std::filesystem::path(c.file).stem().string() + ".pid")).string();
}

std::vector<connector_instance_config> connector_configs(const config& c) {
    std::vector<connector_instance_config> out;
    for (const auto& cc : c.connectors) {
        out.push_back({cc.name, cc.module, cc.settings_json});
    }
    return out;
}

// One process serves a SQLite store: the pid file is held with an exclusive lock for the process's
// life (the kernel drops it when the process dies, SIGKILL included). -1 when another process holds
// it; `holder` is then the pid it wrote.
int lock_pid_file(const std::string& path, long& holder) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        std::ifstream(path) >> holder;
        ::close(fd);
        return -1;
    }
    return fd;
}

void write_pid(int fd) {
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0) {
        (void)!::pwrite(fd, pid.data(), pid.size(), 0);
    }
}

bool print_config_errors(const config_load_result& loaded) {
    for (const auto& e : loaded.errors) {
        std::fprintf(stderr, "%s\n", e.to_string().c_str());
    }
    return !loaded.errors.empty();
}

// Applies the config file's subscriptions to the bridge, then brings every loaded connector in
// line with the store (the file's subscriptions and those registered over the API). A connector
// refusing one of the file's subscriptions is a configuration error; `why` names it.
result<void> apply_subscriptions(const config& c, bridge& b, connector_sync* sync, std::string& why) {
    std::map<std::string, std::string> secrets;
    auto subs = make_subscriptions(c, secrets);
    if (auto r = b.apply_config_subscriptions(subs, secrets); !r) {
        why = r.error().message();
        return r.error();
    }
    if (sync == nullptr) {
        return {};
    }
    auto refused = sync->reconcile();
    if (!refused) {
        why = "cannot read the stored subscriptions: " + refused.error().message();
        return refused.error();
    }
    for (const auto& f : *refused) {
        if (f.origin == subscription::origin_kind::config) {
            why = f.reason;
            return make_error_code(errc::invalid_argument);
        }
    }
    return {};
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

    // Signals are taken synchronously by this thread (sigwait); every thread started below inherits
    // the blocked mask, so none of them is interrupted.
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

    if (!cfg.host_key_file.empty()) {
        // Like the database's folder, the key's folder is made on first start (owner only).
        const auto key_dir = std::filesystem::path(cfg.host_key_file).parent_path();
        std::error_code ec;
        if (std::filesystem::create_directories(key_dir, ec)) {
            std::filesystem::permissions(key_dir, std::filesystem::perms::owner_all, ec);
        }
    }

    const std::string pid_file = pid_file_for(cfg);
    int pid_fd = -1;
    const bool sqlite = cfg.store.backend == store_config::backend_kind::sqlite;
    if (sqlite) {
        std::error_code ec;
        std::filesystem::create_directories(std::filesystem::path(pid_file).parent_path(), ec);
        long holder = 0;
        pid_fd = lock_pid_file(pid_file, holder);
        if (pid_fd < 0) {
            std::fprintf(stderr,
                         "wopbridge serve: %s is in use by another wopbridge serve (pid %ld): one "
                         "process serves a SQLite store; stop that one first, or use PostgreSQL "
                         "for several nodes\n",
                         cfg.store.sqlite_path.c_str(), holder);
            return 1;
        }
    }

    error_info why;
    const std::string store_name = store_display_name(cfg);
    auto st = open_configured_store(cfg, true, why, p.flag("init"));
    if (!st) {
        // The same line as check-config's; the reason never contains the PostgreSQL URL.
        std::fprintf(stderr, "%s\n", store_open_error(cfg, why).to_string().c_str());
        return 1;
    }
    if (auto wrong = check_host_key_against_store(cfg, **st)) {
        std::fprintf(stderr, "%s\n", wrong->to_string().c_str());
        return 2;
    }
    if (sqlite) {
        // Under the lock no other process holds claims: a killed predecessor's are free now.
        if (auto released = (*st)->release_all_claims(); released && *released > 0) {
            log_line("info", "store.claims_released", {{"deliveries", *released}});
        }
    }

    system_clock_source clock;
    system_random_source random;
    bridge_settings settings = make_bridge_settings(cfg);
    auto b = std::make_unique<bridge>(settings, std::move(*st), make_run_starter(cfg), clock, random);
    if (error_info key_why; !b->bind_host_key(key_why)) {
        // Another node bound the store to its key between the check above and now.
        std::fprintf(stderr, "wopbridge serve: %s\n", key_why.message.c_str());
        return key_why.code == errc::conflict ? 2 : 1;
    }

    // Attachments live beside the SQLite database (the config's directory with PostgreSQL).
    const std::string attachment_dir =
        ((cfg.store.backend == store_config::backend_kind::sqlite
              ? std::filesystem::path(cfg.store.sqlite_path).parent_path()
              : cfg.base_dir) /
         "attachments")
            .string();
    // Retention: housekeeping removes files not put again for attachments.retention, plus a
    // margin so a file a put refreshed a moment ago is never the one removed.
    b->add_housekeeping_task([blobs = std::make_shared<blob_store>(attachment_dir, &clock),
                              keep = cfg.attachments.retention_ms](millis now) {
        constexpr millis margin = 3600 * 1000;
        if (auto n = blobs->purge_older_than(now - keep - margin); n && *n > 0) {
            log_line("info", "attachments.purged", {{"files", *n}});
        }
    });
    if (const std::string out_dir = run_output_directory(cfg); !out_dir.empty()) {
        // Run output logs follow the attachments' retention (the last write's mtime counts).
        b->add_housekeeping_task([out_dir, keep = cfg.attachments.retention_ms](millis) {
            std::error_code ec;
            const auto cutoff = std::filesystem::file_time_type::clock::now() -
                                std::chrono::milliseconds(keep);
            int removed = 0;
            for (const auto& e : std::filesystem::directory_iterator(out_dir, ec)) {
                std::error_code fe;
                if (e.path().extension() == ".log" && e.is_regular_file(fe) &&
                    e.last_write_time(fe) < cutoff && std::filesystem::remove(e.path(), fe)) {
                    ++removed;
                }
            }
            if (removed > 0) {
                log_line("info", "run_output.purged", {{"files", removed}});
            }
        });
    }

    std::unique_ptr<bridge_submit_sink> sink;
    std::unique_ptr<connector_host> host;
    if (!cfg.connectors.empty()) {
        sink = std::make_unique<bridge_submit_sink>(*b);
        connector_host_options ho;
        ho.module_dirs = p.values("module-path");
        ho.public_url = settings.public_url;
        ho.attachment_dir = attachment_dir;
        ho.box = b->data_key_box();
        host = std::make_unique<connector_host>(ho, *sink, clock, random);
        if (auto r = host->add_instances(connector_configs(cfg)); !r) {
            std::fprintf(stderr, "wopbridge serve: %s\n", r.error().message.c_str());
            return 2;
        }
    }

    if (host) {
        b->add_metrics_source(
            [h = host.get()] { return connector_metrics_text(h->instances()); });
    }

    std::unique_ptr<connector_sync> sync;
    if (host) {
        // Settings the modules mark secret are sealed before any write reaches the store, and the
        // rows kept in clear before are sealed now, under the key just checked.
        b->set_connector_settings_sealer(
            [h = host.get()](const std::string& connector,
                             const std::string& settings) -> result<std::string> {
                auto sealed = h->seal_settings(connector, settings, seal_mode::intake);
                if (!sealed) {
                    return make_error_code(sealed.error().code);
                }
                return std::move(sealed->json);
            });
        sync = std::make_unique<connector_sync>(*b, *host);
        if (auto sealed = sync->seal_stored_settings(); !sealed) {
            std::fprintf(stderr, "wopbridge serve: cannot seal the stored connector settings: %s\n",
                         sealed.error().message().c_str());
            return 1;
        }
    }
    if (std::string why; !apply_subscriptions(cfg, *b, sync.get(), why)) {
        std::fprintf(stderr, "wopbridge serve: cannot apply subscriptions: %s\n", why.c_str());
        return 2;
    }
    if (auto r = b->start(); !r) {
        std::fprintf(stderr, "wopbridge serve: cannot start the bridge: %s\n",
                     r.error().message().c_str());
        return 1;
    }

    http::server_options so_http;
    so_http.host = cfg.server.listen_host;
    so_http.port = cfg.server.listen_port;
    so_http.threads = cfg.server.threads;
    so_http.max_connections = cfg.server.max_connections;
    so_http.max_in_flight_requests = cfg.server.max_in_flight_requests;
    so_http.reserved_in_flight_requests = cfg.server.reserved_in_flight_requests;
    so_http.max_connections_per_address = cfg.server.max_connections_per_address;
    so_http.min_body_bytes_per_second = cfg.server.min_body_bytes_per_second;
    so_http.body_grace = std::chrono::seconds(cfg.server.body_grace_seconds);
    if (cfg.server.tls) {
        so_http.tls = http::tls_options{cfg.server.tls->cert_file, cfg.server.tls->key_file};
    }
    http::server srv(so_http);
    http::api_options ao;
    for (const auto& k : cfg.api_keys) {
        ao.keys.push_back({k.key, k.tenant, k.scopes});
    }
    ao.max_body_bytes = cfg.server.max_body_bytes;
    ao.ingest_max_body_bytes = cfg.server.max_body_bytes;
    ao.clock = &clock;
    ao.per_subscription = cfg.server.per_subscription;
    ao.per_source_address = cfg.server.per_source_address;
    ao.subscription_rate_limits = subscription_rate_limits(cfg);
    ao.run_output_dir = run_output_directory(cfg);
    http::http_api api(ao, *b, host.get(), srv.scheduler());
    if (auto r = srv.start(api); !r) {
        const bool in_use = r.error() == boost::system::errc::address_in_use;
        std::fprintf(stderr, "wopbridge serve: cannot listen on %s: %s%s\n",
                     cfg.server.listen.c_str(), r.error().message().c_str(),
                     in_use ? " (another process holds it: stop it, or pick another address with "
                              "--listen ADDR, $WOPBRIDGE_LISTEN or server.listen; port 0 takes any "
                              "free port)"
                            : "");
        b->stop();
        return 1;
    }

    if (sync) {
        // What other nodes register or delete reaches this node's connectors within this.
        sync->start(std::chrono::seconds(2));
    }
    if (pid_fd >= 0) {
        write_pid(pid_fd);
    } else {
        std::ofstream(pid_file) << ::getpid() << "\n";
    }
    boost::json::array modules;
    if (host) {
        for (const auto& i : host->instances()) {
            modules.push_back(boost::json::object{
                {"name", i.name}, {"module", i.module_name}, {"version", i.version},
                {"subscriptions", i.subscriptions.size()}});
        }
    }
    boost::json::array subs;
    for (const auto& s : cfg.subscriptions) {
        subs.push_back(boost::json::object{{"id", s.id},
                                           {"source", std::string(to_string(s.source))},
                                           {"connector", s.connector}});
    }
    log_line("info", "wopbridge.started",
             {{"version", WOPBRIDGE_VERSION},
              {"listen", cfg.server.listen_host + ":" + std::to_string(srv.port())},
              {"port", srv.port()},
              {"publicUrl", settings.public_url},
              {"store", store_name},
              {"modules", modules},
              {"subscriptions", subs},
              {"coreDumps", core_dumps.detail},
              {"keysInSecureHeap", secure_heap}});

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
            std::string why;
            auto r = apply_subscriptions(*again.value, *b, sync.get(), why);
            api.set_subscription_rate_limits(subscription_rate_limits(*again.value));
            boost::json::object fields{{"subscriptions", again.value->subscriptions.size()}};
            if (!r) {
                fields["error"] = why;
            }
            log_line(r ? "info" : "warn", r ? "wopbridge.reloaded" : "wopbridge.reload_failed",
                     std::move(fields));
            continue;
        }
        log_line("info", "wopbridge.stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
        break;
    }

    // Drain in order: stop accepting and finish in-flight requests (their commits complete and their
    // responses are sent) -> stop the engine and scheduler -> stop connectors -> close the store.
    srv.stop(std::chrono::seconds(10));
    if (sync) {
        sync->stop();
    }
    if (host) {
        host->stop_all();
    }
    b->stop();
    if (pid_fd >= 0) {
        // Emptied, not removed: unlinking a locked file would let a starting process lock a
        // second inode under the same name.
        (void)!::ftruncate(pid_fd, 0);
    } else {
        std::error_code ec;
        std::filesystem::remove(pid_file, ec);
    }
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
    const std::string pid_file = pid_file_for(*loaded.value);
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
