#pragma once
// Prometheus text for the loaded connector instances' counters (GET /metrics). The serve command
// registers it with bridge::add_metrics_source; labels are instance names from the config file.

#include "plugins/connector_host.hpp"

#include <string>
#include <vector>

namespace wopbridge {

std::string connector_metrics_text(const std::vector<connector_instance_info>& instances);

} // namespace wopbridge
