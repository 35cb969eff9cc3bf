#pragma once
// How the HTTP layer hands an ingest request for a connector-backed subscription to the connector
// module that serves it (implemented by plugins/). No Asio here: the reply comes back through a
// callback, exactly once, from any thread.

#include "app/bridge.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace wopbridge {

struct ingest_reply {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers; // e.g. content-type, retry-after
    std::string body;
};

using ingest_reply_callback = std::function<void(ingest_reply)>;

class ingest_router {
public:
    virtual ~ingest_router() = default;
    // True when a loaded connector serves this subscription (subscription.connector names it).
    virtual bool serves(const subscription& sub) const = 0;
    // Hands the request to the connector. `reply` is called exactly once; when the connector fails
    // to answer within its deadline the router answers 503 itself.
    virtual void handle(const subscription& sub, const inbound_http_request& req,
                        ingest_reply_callback reply) = 0;
    // Trigger sources contributed by loaded connectors (for triggerBridge.sources), e.g. "email".
    virtual std::vector<std::string> sources() const = 0;
    // The queue engines loaded connectors consume, as discovery's queueBus.backends names them.
    virtual std::vector<std::string> queue_backends() const { return {}; }

    // Subscriptions registered over the API reach their connector like the config file's: the
    // instance names loaded on this node, a committed subscription handed to its connector (a
    // refusal says why, one line, naming the subscription), and one deleted taken back.
    virtual std::vector<std::string> connector_names() const { return {}; }
    virtual result<void, error_info> attach(const subscription& /*sub*/) {
        return error_info{errc::not_found, "no connectors are loaded on this node"};
    }
    virtual void detach(const subscription& /*sub*/) {}
};

} // namespace wopbridge
