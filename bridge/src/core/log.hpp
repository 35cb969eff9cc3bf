#pragma once
// Structured logs: one JSON object per line on stderr, {"ts","level","event",...fields}. Callers put
// ids, states and counts in fields, never inbound content or secrets.

#include <boost/json/object.hpp>

#include <string_view>

namespace wopbridge {

// "trace" "debug" "info" "warn" "error"; unknown names mean "info".
void set_log_level(std::string_view level);
bool log_enabled(std::string_view level);
void log_line(std::string_view level, std::string_view event, boost::json::object fields);

} // namespace wopbridge
