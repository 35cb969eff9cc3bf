// docs/writing-a-connector.md, section 3 ("The C++ wrapper"): the class shape and the macro, as a
// module writes them, compiled against the SDK (tests/doc/CMakeLists.txt extracts the doc's
// ```cpp blocks at configure time, with #line directives naming the doc's lines). The definitions
// below, outside the doc, make it a module `wopbridge connector-check` loads and checks
// (DocSnippets.WrapperShapeModulePassesConnectorCheck).
#include "wopbridge/connector.hpp"
#include "wopbridge/json_util.hpp"

#include <string>
#include <string_view>

#include "writing_a_connector_blocks.hpp"

static_assert(WRITING_A_CONNECTOR_CPP_BLOCKS == 3,
              "docs/writing-a-connector.md has a new ```cpp block (or lost one): compile it in "
              "tests/doc/writing_a_connector_shape.cpp or writing_a_connector_walkthrough.cpp");

#include "writing_a_connector_block_1.inc"

wopbridge::connector_info my_connector::info() {
    wopbridge::connector_info i;
    i.name = "my_connector";
    i.version = "0.0.1";
    i.status = "wip";
    i.security_posture = "refuses every request: the shape of docs/writing-a-connector.md only";
    i.source = "webhook";
    i.capabilities = WB_CAP_HTTP_INGEST;
    return i;
}

wopbridge::status my_connector::validate(std::string_view config, std::string& error) {
    return wopbridge::json::parse_flat_object(config.empty() ? "{}" : config, &error)
               ? wopbridge::status::ok
               : wopbridge::status::invalid;
}

my_connector::my_connector(wopbridge::host&, std::string_view) {}

wopbridge::status my_connector::start() { return wopbridge::status::ok; }

wopbridge::status my_connector::subscribe(const wopbridge::subscription_info& sub,
                                          std::string& error) {
    return wopbridge::json::parse_flat_object(sub.settings_json, &error)
               ? wopbridge::status::ok
               : wopbridge::status::invalid;
}

wopbridge::status my_connector::unsubscribe(std::string_view) { return wopbridge::status::ok; }

void my_connector::on_http_request(wopbridge::request_handle req,
                                   const wopbridge::http_request_view&) {
    req.respond(401, {{"content-type", "application/json"}}, R"({"error":"signature_invalid"})");
}

wopbridge::status my_connector::stop(std::int64_t) { return wopbridge::status::ok; }
