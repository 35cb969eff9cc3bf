#include "nats/nats_link.hpp"

#include <mutex>
#include <vector>

namespace wopbridge::nats {

// The client calls connection handlers on its own threads, and may still call one (closed,
// disconnected) after natsConnection_Destroy returned. So the closure is not the link: it is a
// small object that is switched off when the link goes and never freed (retired_events).
struct nats_link::events {
    std::mutex mu;
    const wopbridge::host* host = nullptr; // nullptr once the link is gone
    std::int64_t reconnect_wait_ms = 0;
    bool ever_connected = false;

    void log(wopbridge::log_level level, const std::string& line) {
        std::lock_guard lock(mu);
        if (host != nullptr) {
            host->log(level, "nats: " + line);
        }
    }
};

namespace {

// nats.c is one library per process, shared with anything else in it that uses NATS (the tests'
// own client does), so the module opens it once and never closes it: nats_Close from here could
// tear it down under another user (nats_CloseAndWait blocks until every user's objects are gone).
// The module is linked -z nodelete, so the client's threads never outlive its code.
std::mutex library_mu;
// Closures of links that are gone: kept, because the client may still call a handler late (see
// nats_link::events); one small object per connector instance ever created.
std::vector<std::unique_ptr<nats_link::events>>& retired_events() {
    static std::vector<std::unique_ptr<nats_link::events>> v;
    return v;
}

bool open_library(std::string& error) {
    static const natsStatus opened = nats_Open(-1);
    if (opened != NATS_OK) {
        error = "nats client library: " + status_text(opened);
        return false;
    }
    return true;
}

void retire(std::unique_ptr<nats_link::events> ev) {
    {
        std::lock_guard lock(ev->mu);
        ev->host = nullptr;
    }
    std::lock_guard lock(library_mu);
    retired_events().push_back(std::move(ev));
}

std::string connected_url(natsConnection* nc) {
    char buf[512] = {0};
    if (natsConnection_GetConnectedUrl(nc, buf, sizeof buf) != NATS_OK) {
        return "?";
    }
    return redacted_url(buf);
}

void on_connected(natsConnection* nc, void* closure) {
    auto* ev = static_cast<nats_link::events*>(closure);
    {
        std::lock_guard lock(ev->mu);
        ev->ever_connected = true;
    }
    ev->log(wopbridge::log_level::info, "connected to " + connected_url(nc));
}

void on_disconnected(natsConnection* nc, void* closure) {
    auto* ev = static_cast<nats_link::events*>(closure);
    if (natsConnection_IsClosed(nc)) {
        return; // our own close, not an outage
    }
    ev->log(wopbridge::log_level::warn, "connection lost; reconnecting every " +
                                            std::to_string(ev->reconnect_wait_ms) +
                                            " ms (unacked messages stay in JetStream)");
}

void on_reconnected(natsConnection* nc, void* closure) {
    static_cast<nats_link::events*>(closure)->log(wopbridge::log_level::info,
                                                  "connection regained to " + connected_url(nc));
}

void on_async_error(natsConnection*, natsSubscription*, natsStatus err, void* closure) {
    static_cast<nats_link::events*>(closure)->log(wopbridge::log_level::warn,
                                                  "client error: " + status_text(err));
}

} // namespace

std::string status_text(natsStatus s) {
    return natsStatus_GetText(s);
}

std::string redacted_url(std::string_view url) {
    const auto scheme = url.find("://");
    if (scheme == std::string_view::npos) {
        return std::string(url);
    }
    auto rest = url.substr(scheme + 3);
    const auto at = rest.rfind('@');
    if (at != std::string_view::npos) {
        rest = rest.substr(at + 1);
    }
    return std::string(url.substr(0, scheme + 3)) + std::string(rest);
}

std::unique_ptr<nats_link> nats_link::make(const wopbridge::host& host, const connector_settings& s,
                                           std::string& error) {
    if (!open_library(error)) {
        return nullptr;
    }
    auto ev = std::make_unique<events>();
    ev->host = &host;
    ev->reconnect_wait_ms = s.reconnect_wait_ms;
    natsOptions* opts = nullptr;
    natsStatus st = natsOptions_Create(&opts);
    // Each step names what failed, never the value (a path or a secret).
    const auto step = [&](natsStatus r, const char* what) {
        if (st == NATS_OK && r != NATS_OK) {
            st = r;
            error = std::string("settings: ") + what + ": " + status_text(r);
        }
    };
    if (st != NATS_OK) {
        error = "nats options: " + status_text(st);
    } else {
        step(natsOptions_SetURL(opts, s.url.c_str()), "url");
        step(natsOptions_SetName(opts, s.name.c_str()), "name");
        step(natsOptions_SetTimeout(opts, s.connect_timeout_ms), "connectTimeoutMs");
        step(natsOptions_SetMaxReconnect(opts, -1), "reconnect");
        step(natsOptions_SetReconnectWait(opts, s.reconnect_wait_ms), "reconnectWaitMs");
        // A pull request sent into a dead connection fails at once instead of at its expiry.
        step(natsOptions_SetFailRequestsOnDisconnect(opts, true), "reconnect");
        step(natsOptions_SetRetryOnFailedConnect(opts, true, on_connected, ev.get()), "connect");
        step(natsOptions_SetDisconnectedCB(opts, on_disconnected, ev.get()), "callbacks");
        step(natsOptions_SetReconnectedCB(opts, on_reconnected, ev.get()), "callbacks");
        step(natsOptions_SetErrorHandler(opts, on_async_error, ev.get()), "callbacks");
        if (!s.user.empty()) {
            step(natsOptions_SetUserInfo(opts, s.user.c_str(), s.password.c_str()), "user");
        }
        if (!s.token.empty()) {
            step(natsOptions_SetToken(opts, s.token.c_str()), "token");
        }
        if (!s.creds_file.empty()) {
            step(natsOptions_SetUserCredentialsFromFiles(opts, s.creds_file.c_str(), nullptr),
                 "credsFile");
        }
        if (!s.nkey_seed_file.empty()) {
            // The public key is derived from the seed by the library when given the seed file.
            step(natsOptions_SetNKeyFromSeed(opts, nullptr, s.nkey_seed_file.c_str()),
                 "nkeySeedFile");
        }
        if (s.wants_tls()) {
            step(natsOptions_SetSecure(opts, true), "tls");
        }
        if (!s.tls_ca.empty()) {
            step(natsOptions_LoadCATrustedCertificates(opts, s.tls_ca.c_str()), "tlsCa");
        }
        if (!s.tls_cert.empty()) {
            step(natsOptions_LoadCertificatesChain(opts, s.tls_cert.c_str(), s.tls_key.c_str()),
                 "tlsCert/tlsKey");
        }
    }
    if (st != NATS_OK) {
        if (opts != nullptr) {
            natsOptions_Destroy(opts);
        }
        retire(std::move(ev));
        return nullptr;
    }
    return std::unique_ptr<nats_link>(new nats_link(host, opts, ev.release()));
}

nats_link::~nats_link() {
    close(0);
    natsOptions_Destroy(opts_);
    retire(std::unique_ptr<events>(events_));
}

bool nats_link::connect(std::string& error) {
    if (nc_ != nullptr) {
        return true;
    }
    const auto st = natsConnection_Connect(&nc_, opts_);
    if (st == NATS_NOT_YET_CONNECTED) {
        events_->log(wopbridge::log_level::warn,
                     "no server reachable yet; connecting in the background every " +
                         std::to_string(events_->reconnect_wait_ms) + " ms");
        return true;
    }
    if (st != NATS_OK) {
        nc_ = nullptr;
        error = "connect: " + status_text(st);
        return false;
    }
    events_->log(wopbridge::log_level::info, "connected to " + connected_url(nc_));
    return true;
}

void nats_link::close(std::int64_t timeout_ms) {
    if (nc_ == nullptr) {
        return;
    }
    if (timeout_ms > 0 && connected()) {
        natsConnection_FlushTimeout(nc_, timeout_ms);
    }
    natsConnection_Destroy(nc_);
    nc_ = nullptr;
}

bool nats_link::connected() const {
    return nc_ != nullptr && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

} // namespace wopbridge::nats
