#pragma once
// One NATS connection per connector instance, through the official C client (nats.c). The client
// reconnects by itself (forever, every reconnectWaitMs); this class turns its connection events
// into log lines ("connection lost", "connection regained"). nats.c itself is opened once per
// process and never closed by the module (nats_link.cpp says why).

#include "nats/settings.hpp"

#include "wopbridge/connector.hpp"

#include <nats/nats.h>

#include <memory>
#include <string>

namespace wopbridge::nats {

// The text of a client status, for logs (never carries a secret).
std::string status_text(natsStatus s);

// "nats://host:port" without user info, for logs.
std::string redacted_url(std::string_view url);

class nats_link {
  public:
    struct events; // callback closure; outlives the connection (see nats_link.cpp)

    // Builds the client options (credentials, TLS files are loaded here, so a missing or bad file
    // is refused at create time with a one-line reason). Does not connect.
    static std::unique_ptr<nats_link> make(const wopbridge::host& host,
                                           const connector_settings& settings, std::string& error);
    ~nats_link();
    nats_link(const nats_link&) = delete;
    nats_link& operator=(const nats_link&) = delete;

    // Connects, or keeps connecting in the background when no server answers yet: a broker
    // outage is an outage of this source, not of the bridge. False only on a client error.
    bool connect(std::string& error);
    // Flushes what is buffered (acks) for up to `timeout_ms`, then closes.
    void close(std::int64_t timeout_ms);

    natsConnection* connection() const noexcept { return nc_; }
    bool connected() const;

  private:
    nats_link(const wopbridge::host& host, natsOptions* opts, events* ev)
        : host_(host), opts_(opts), events_(ev) {}

    const wopbridge::host& host_;
    natsOptions* opts_ = nullptr;
    natsConnection* nc_ = nullptr;
    events* events_ = nullptr;
};

} // namespace wopbridge::nats
