#include "plugins/connector_metrics.hpp"

#include "core/metrics.hpp"

namespace wopbridge {

std::string connector_metrics_text(const std::vector<connector_instance_info>& instances) {
    metrics_registry reg;
    reg.declare("wopbridge_connector_errors_total", metric_kind::counter,
                "Connector errors: failed statuses, caught exceptions, bad or late responses, "
                "respond timeouts and error-level log lines.",
                {"connector"});
    reg.declare("wopbridge_connector_requests_total", metric_kind::counter,
                "Inbound HTTP requests handed to a connector.", {"connector"});
    reg.declare("wopbridge_connector_timeouts_total", metric_kind::counter,
                "Requests the host answered 503 because the connector did not respond in time.",
                {"connector"});
    reg.declare("wopbridge_connector_running", metric_kind::gauge,
                "1 while the connector instance is running.", {"connector"});
    for (const auto& i : instances) {
        const metric_labels l{{"connector", i.name}};
        // Counters start at zero in this scratch registry: incrementing by the host's totals
        // renders them as they are.
        reg.increment("wopbridge_connector_errors_total", l, static_cast<double>(i.stats.errors));
        reg.increment("wopbridge_connector_requests_total", l,
                      static_cast<double>(i.stats.requests));
        reg.increment("wopbridge_connector_timeouts_total", l,
                      static_cast<double>(i.stats.timeouts));
        reg.set("wopbridge_connector_running", l, i.running ? 1 : 0);
    }
    return reg.exposition();
}

} // namespace wopbridge
