#pragma once
// Reading a connector's JSON settings with Boost.JSON (header-only, like json_bytes.hpp): the
// typed getters the forms and email connectors share. A bad value throws config_error with a
// one-line reason; the wrapper turns a throwing constructor into WB_ERR_INVALID with that reason,
// and validate()/subscribe() catch it into their error string.

#include <wopbridge/connector_values.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace wopbridge::json_config {

struct config_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Runs `read` (which parses settings and keeps them); a config_error becomes status::invalid with
// its reason in `error`, for validate() and subscribe().
template <class Fn> status status_of_reading(std::string& error, Fn&& read) {
    try {
        read();
        return status::ok;
    } catch (const config_error& e) {
        error = e.what();
        return status::invalid;
    }
}

// What a settings text that is not JSON at all is told.
enum class syntax_wording { not_valid_json, must_be_object };

// `text` ("" reads as {}) as a JSON object; `what` names it in the reason ("config", "settings").
inline boost::json::object parse_object(std::string_view text, std::string_view what,
                                        syntax_wording wording = syntax_wording::not_valid_json) {
    boost::system::error_code ec;
    auto v = boost::json::parse(text.empty() ? std::string_view("{}") : text, ec);
    if (ec && wording == syntax_wording::not_valid_json) {
        throw config_error(std::string(what) + " is not valid JSON");
    }
    if (ec || !v.is_object()) {
        throw config_error(std::string(what) + " must be a JSON object");
    }
    return std::move(v.as_object());
}

// Refuses any key outside `known`: "unknown <where> key <key>".
inline void check_keys(const boost::json::object& o, std::initializer_list<std::string_view> known,
                       std::string_view where) {
    for (const auto& kv : o) {
        if (std::find(known.begin(), known.end(), kv.key()) == known.end()) {
            throw config_error("unknown " + std::string(where) + " key " + std::string(kv.key()));
        }
    }
}

// An integer in [min, max], `def` when absent.
inline std::int64_t get_int(const boost::json::object& o, std::string_view key, std::int64_t def,
                            std::int64_t min, std::int64_t max) {
    auto it = o.find(key);
    if (it == o.end()) {
        return def;
    }
    if (!it->value().is_int64() && !it->value().is_uint64()) {
        throw config_error(std::string(key) + " must be an integer");
    }
    auto v = it->value().is_int64() ? it->value().as_int64()
                                    : static_cast<std::int64_t>(it->value().as_uint64());
    if (v < min || v > max) {
        throw config_error(std::string(key) + " is out of range");
    }
    return v;
}

// A string (non-empty unless allow_empty), `def` when absent.
inline std::string get_string(const boost::json::object& o, std::string_view key,
                              std::string def = {}, bool allow_empty = false) {
    auto it = o.find(key);
    if (it == o.end()) {
        return def;
    }
    if (!it->value().is_string() || (!allow_empty && it->value().as_string().empty())) {
        throw config_error(std::string(key) + " must be a non-empty string");
    }
    return std::string(it->value().as_string());
}

} // namespace wopbridge::json_config
