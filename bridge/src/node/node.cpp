#include "node/node.hpp"

#include "app/bridge.hpp"
#include "app/bridge_api.hpp"
#include "app/file_housekeeping.hpp"
#include "app/preflight.hpp"
#include "core/log.hpp"
#include "http/api.hpp"
#include "http/server.hpp"
#include "plugins/connector_host.hpp"
#include "plugins/connector_metrics.hpp"
#include "plugins/connector_sync.hpp"
#include "plugins/submit_sink.hpp"
#include "store/store_backend.hpp"

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace wopbridge {
namespace {

namespace fs = std::filesystem;

std::vector<connector_instance_config> connector_configs(const config& c) {
    std::vector<connector_instance_config> out;
    for (const auto& cc : c.connectors) {
        out.push_back({cc.name, cc.module, cc.settings_json});
    }
    return out;
}

// Held with an exclusive lock for the process's life (the kernel drops it when the process dies,
// SIGKILL included). -1 when another process holds it; `holder` is then the pid it wrote.
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

// Applies the file's subscriptions to the bridge, then brings every loaded connector in line with
// the store (the file's subscriptions and those registered over the API). A connector refusing
// one of the file's subscriptions is a configuration error.
result<void, error_info> apply_subscriptions(const config& c, bridge& b, connector_sync* sync) {
    std::map<std::string, std::string> secrets;
    auto subs = make_subscriptions(c, secrets);
    if (auto r = b.apply_config_subscriptions(subs, secrets); !r) {
        return error_info{errc::invalid_argument, r.error().message()};
    }
    if (sync == nullptr) {
        return {};
    }
    auto refused = sync->reconcile();
    if (!refused) {
        return error_info{errc::store_unavailable,
                          "cannot read the stored subscriptions: " + refused.error().message()};
    }
    for (const auto& f : *refused) {
        if (f.origin == subscription::origin_kind::config) {
            return error_info{errc::invalid_argument, f.reason};
        }
    }
    return {};
}

http::server_options server_options_of(const config& cfg) {
    http::server_options so;
    so.host = cfg.server.listen_host;
    so.port = cfg.server.listen_port;
    so.threads = cfg.server.threads;
    so.max_connections = cfg.server.max_connections;
    so.max_in_flight_requests = cfg.server.max_in_flight_requests;
    so.reserved_in_flight_requests = cfg.server.reserved_in_flight_requests;
    so.max_connections_per_address = cfg.server.max_connections_per_address;
    so.min_body_bytes_per_second = cfg.server.min_body_bytes_per_second;
    so.body_grace = std::chrono::seconds(cfg.server.body_grace_seconds);
    if (cfg.server.tls) {
        so.tls = http::tls_options{cfg.server.tls->cert_file, cfg.server.tls->key_file};
    }
    return so;
}

http::api_options api_options_of(const config& cfg, clock_source& clock) {
    http::api_options ao;
    for (const auto& k : cfg.api_keys) {
        ao.keys.push_back({k.key, k.tenant, k.scopes});
    }
    ao.max_body_bytes = cfg.server.max_body_bytes;
    ao.ingest_max_body_bytes = cfg.server.max_body_bytes;
    ao.clock = &clock;
    ao.per_subscription = cfg.server.per_subscription;
    ao.per_source_address = cfg.server.per_source_address;
    ao.trusted_proxies = cfg.server.trusted_proxies;
    ao.subscription_rate_limits = subscription_rate_limits(cfg);
    ao.run_output_dir = run_output_directory(cfg);
    return ao;
}

node_start_failure failed(int exit_code, std::string message) {
    return {exit_code, std::move(message)};
}

} // namespace

// Declared in the order they are built: destroyed in reverse, after stop() has stopped them.
struct node::parts {
    node_options o;
    system_clock_source clock;
    system_random_source random;
    std::string pid_file;
    int pid_fd = -1;
    bool pid_written = false; // by this process: removed again at stop
    bool started = false;
    std::unique_ptr<bridge> b;
    std::unique_ptr<bridge_submit_sink> sink;
    std::unique_ptr<connector_host> host;
    std::unique_ptr<connector_sync> sync;
    std::unique_ptr<http::server> srv;
    std::unique_ptr<http::http_api> api;

    result<void, node_start_failure> open_store_and_bridge();
    result<void, node_start_failure> start_connectors(const std::string& attachment_dir);
    void log_started() const;
};

std::string node_pid_file(const config& c) {
    // One process per store: beside it. Several nodes may share a config directory, so the pid
    // file is then named after the config file.
    if (c.store.backend->one_process_per_store()) {
        return (c.store.backend->node_files_directory(c) / "wopbridge.pid").string();
    }
    return (c.base_dir / (fs::path(c.file).stem().string() + ".pid")).string();
}

node::node(node_options options) : parts_(std::make_unique<parts>()) {
    parts_->o = std::move(options);
}

node::~node() {
    stop();
}

std::uint16_t node::port() const {
    return parts_->srv ? parts_->srv->port() : 0;
}

result<void, node_start_failure> node::parts::open_store_and_bridge() {
    const config& cfg = o.cfg;
    const configured_store& backend = *cfg.store.backend;
    if (!cfg.host_key_file.empty()) {
        // Like the database's folder, the key's folder is made on first start (owner only).
        const auto key_dir = fs::path(cfg.host_key_file).parent_path();
        std::error_code ec;
        if (fs::create_directories(key_dir, ec)) {
            fs::permissions(key_dir, fs::perms::owner_all, ec);
        }
    }
    pid_file = node_pid_file(cfg);
    if (backend.one_process_per_store()) {
        std::error_code ec;
        fs::create_directories(fs::path(pid_file).parent_path(), ec);
        long holder = 0;
        pid_fd = lock_pid_file(pid_file, holder);
        if (pid_fd < 0) {
            return failed(1, "wopbridge serve: " + backend.display_name() +
                                 " is in use by another wopbridge serve (pid " +
                                 std::to_string(holder) +
                                 "): one process serves a SQLite store; stop that one first, or "
                                 "use PostgreSQL for several nodes");
        }
    }
    auto st = open_configured_store(
        cfg, o.init_empty_store ? store_open_mode::serve_init : store_open_mode::serve);
    if (!st) {
        // The same line as check-config's; the reason never contains the PostgreSQL URL.
        return failed(1, store_open_error(cfg, st.error()).to_string());
    }
    if (auto wrong = check_host_key_against_store(cfg, **st)) {
        return failed(2, wrong->to_string());
    }
    if (backend.one_process_per_store()) {
        // Under the lock no other process holds claims: a killed predecessor's are free now.
        if (auto released = (*st)->release_all_claims(); released && *released > 0) {
            log_line("info", "store.claims_released", {{"deliveries", *released}});
        }
    }
    b = std::make_unique<bridge>(make_bridge_settings(cfg), std::move(*st), make_run_starter(cfg),
                                 clock, random);
    if (auto bound = b->bind_host_key(); !bound) {
        // Another node bound the store to its key between the check above and now.
        return failed(bound.error().code == errc::conflict ? 2 : 1,
                      "wopbridge serve: " + bound.error().message);
    }
    return {};
}

result<void, node_start_failure> node::parts::start_connectors(const std::string& attachment_dir) {
    if (o.cfg.connectors.empty()) {
        return {};
    }
    sink = std::make_unique<bridge_submit_sink>(*b);
    connector_host_options ho;
    ho.module_dirs = o.module_dirs;
    ho.public_url = o.cfg.server.public_url;
    ho.attachment_dir = attachment_dir;
    ho.box = b->data_key_box();
    host = std::make_unique<connector_host>(ho, *sink, clock, random);
    if (auto r = host->add_instances(connector_configs(o.cfg)); !r) {
        return failed(2, "wopbridge serve: " + r.error().message);
    }
    b->add_metrics_source([h = host.get()] { return connector_metrics_text(h->instances()); });
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
        return failed(1, "wopbridge serve: cannot seal the stored connector settings: " +
                             sealed.error().message());
    }
    return {};
}

result<void, node_start_failure> node::start() {
    parts& p = *parts_;
    const config& cfg = p.o.cfg;
    auto undo = [this](node_start_failure f) -> result<void, node_start_failure> {
        stop();
        return f;
    };
    if (auto r = p.open_store_and_bridge(); !r) {
        return undo(r.error());
    }
    // Attachments live beside the store's node files (the SQLite database's folder, the config's
    // directory with PostgreSQL).
    const std::string attachment_dir =
        (cfg.store.backend->node_files_directory(cfg) / "attachments").string();
    add_file_housekeeping(*p.b, attachment_dir, run_output_directory(cfg),
                          cfg.attachments.retention_ms, p.clock);
    if (auto r = p.start_connectors(attachment_dir); !r) {
        return undo(r.error());
    }
    if (auto r = apply_subscriptions(cfg, *p.b, p.sync.get()); !r) {
        return undo(failed(2, "wopbridge serve: cannot apply subscriptions: " + r.error().message));
    }
    if (auto r = p.b->start(); !r) {
        return undo(failed(1, "wopbridge serve: cannot start the bridge: " + r.error().message()));
    }
    p.started = true;
    p.srv = std::make_unique<http::server>(server_options_of(cfg));
    p.api = std::make_unique<http::http_api>(api_options_of(cfg, p.clock), *p.b, p.host.get(),
                                             p.srv->scheduler());
    if (auto r = p.srv->start(*p.api); !r) {
        const bool in_use = r.error() == boost::system::errc::address_in_use;
        return undo(failed(
            1, "wopbridge serve: cannot listen on " + cfg.server.listen + ": " +
                   r.error().message() +
                   (in_use ? " (another process holds it: stop it, or pick another address with "
                             "--listen ADDR, $WOPBRIDGE_LISTEN or server.listen; port 0 takes any "
                             "free port)"
                           : "")));
    }
    if (p.sync) {
        // What other nodes register or delete reaches this node's connectors within this.
        p.sync->start(std::chrono::seconds(2));
    }
    if (p.pid_fd >= 0) {
        write_pid(p.pid_fd);
    } else {
        std::ofstream(p.pid_file) << ::getpid() << "\n";
        p.pid_written = true;
    }
    p.log_started();
    return {};
}

void node::parts::log_started() const {
    boost::json::array modules;
    if (host) {
        for (const auto& i : host->instances()) {
            modules.push_back(boost::json::object{{"name", i.name},
                                                  {"module", i.module_name},
                                                  {"version", i.version},
                                                  {"subscriptions", i.subscriptions.size()}});
        }
    }
    boost::json::array subs;
    for (const auto& s : o.cfg.subscriptions) {
        subs.push_back(boost::json::object{{"id", s.id},
                                           {"source", std::string(to_string(s.source))},
                                           {"connector", s.connector}});
    }
    log_line("info", "wopbridge.started",
             {{"version", WOPBRIDGE_VERSION},
              {"listen", o.cfg.server.listen_host + ":" + std::to_string(srv->port())},
              {"port", srv->port()},
              {"publicUrl", o.cfg.server.public_url},
              {"store", o.cfg.store.backend->display_name()},
              {"modules", modules},
              {"subscriptions", subs},
              {"coreDumps", o.core_dumps},
              {"keysInSecureHeap", o.keys_in_secure_heap}});
}

result<void, error_info> node::reload(const config& again) {
    parts& p = *parts_;
    auto r = apply_subscriptions(again, *p.b, p.sync.get());
    p.api->set_subscription_rate_limits(subscription_rate_limits(again));
    return r;
}

void node::stop() {
    parts& p = *parts_;
    if (p.srv) {
        p.srv->stop(std::chrono::seconds(10));
    }
    if (p.sync) {
        p.sync->stop();
    }
    if (p.host) {
        p.host->stop_all();
    }
    if (p.b && p.started) {
        p.b->stop();
        p.started = false;
    }
    p.api.reset();
    p.srv.reset();
    p.sync.reset();
    p.host.reset();
    p.sink.reset();
    p.b.reset(); // closes the store
    if (p.pid_fd >= 0) {
        // Emptied, not removed: unlinking a locked file would let a starting process lock a
        // second inode under the same name.
        (void)!::ftruncate(p.pid_fd, 0);
        ::close(p.pid_fd);
        p.pid_fd = -1;
    } else if (p.pid_written) {
        std::error_code ec;
        fs::remove(p.pid_file, ec);
        p.pid_written = false;
    }
}

} // namespace wopbridge
