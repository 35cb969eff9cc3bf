// JSON request bodies: Boost.JSON parse (with the depth limit a server would use) and the JSON
// Schema validator on the subscription (registration) schema and the inbound trigger event.
#include "contract/json_schema.hpp"

#include <boost/json/parse.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#ifndef WOPBRIDGE_SCHEMA_DIR
#error "WOPBRIDGE_SCHEMA_DIR must point at the tree's schemas/ directory"
#endif

namespace {

const wopbridge::schema_registry& registry() {
    static const wopbridge::schema_registry reg = [] {
        wopbridge::schema_registry r;
        auto n = r.add_directory(WOPBRIDGE_SCHEMA_DIR);
        if (!n || *n == 0) {
            std::abort(); // a broken setup must not look like a clean fuzz run
        }
        return r;
    }();
    return reg;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    boost::json::parse_options opts;
    opts.max_depth = 64;
    boost::system::error_code ec;
    auto v = boost::json::parse(in, ec, {}, opts);
    if (ec) {
        return 0;
    }
    const auto& reg = registry();
    (void)reg.validate(v, "trigger-subscription.schema.json");
    (void)reg.validate(v, "v2/trigger-event.schema.json");
    return 0;
}
