// YAML config loader (parse_config) with an environment lookup that returns a fixed value, so
// ${VAR} substitution paths run without touching the process environment.
#include "config/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) {
        return 0;
    }
    std::string_view in(reinterpret_cast<const char*>(data), size);
    wopbridge::env_lookup env = [](const std::string& name) -> std::optional<std::string> {
        if (name == "UNSET") {
            return std::nullopt;
        }
        return std::string("fuzz-value");
    };
    auto r = wopbridge::parse_config(in, "fuzz.yaml", "/nonexistent-fuzz-base", env);
    if (r) {
        (void)wopbridge::make_bridge_settings(*r.value);
    }
    return 0;
}
