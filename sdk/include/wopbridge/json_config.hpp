#pragma once
// Reading a connector's JSON settings with Boost.JSON (header-only, like json_bytes.hpp): the
// typed getters the forms, email, slack and sms connectors share. A bad value throws config_error
// with a one-line reason; the wrapper turns a throwing constructor into WB_ERR_INVALID with that
// reason, and validate()/subscribe() catch it into their error string.

#include <wopbridge/connector_values.hpp>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

// `text` ("" or only whitespace reads as {}) as a JSON object; `what` names it in the reason
// ("config", "settings").
inline boost::json::object parse_object(std::string_view text, std::string_view what,
                                        syntax_wording wording = syntax_wording::not_valid_json) {
    boost::system::error_code ec;
    const bool blank = text.find_first_not_of(" \t\r\n") == std::string_view::npos;
    auto v = boost::json::parse(blank ? std::string_view("{}") : text, ec);
    if (ec && wording == syntax_wording::not_valid_json) {
        throw config_error(std::string(what) + " is not valid JSON");
    }
    if (ec || !v.is_object()) {
        throw config_error(std::string(what) + " must be a JSON object");
    }
    return std::move(v.as_object());
}

// A connector's settings of type S: `apply(S&, const boost::json::object&)` (which throws
// config_error) over a copy of `base`, `text` read as "settings"; nullopt with the reason in
// `error`. The shape of a layered connector's parse and override functions (slack, sms).
template <class S, class Apply>
std::optional<S> read_settings(S base, std::string_view text, std::string& error, Apply&& apply) {
    const auto st = status_of_reading(error, [&] {
        apply(base, parse_object(text, "settings", syntax_wording::must_be_object));
    });
    if (st != status::ok) {
        return std::nullopt;
    }
    return base;
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

// A non-empty array of non-empty strings; nullopt when absent.
inline std::optional<std::vector<std::string>> get_string_list(const boost::json::object& o,
                                                               std::string_view key) {
    auto it = o.find(key);
    if (it == o.end()) {
        return std::nullopt;
    }
    const auto* arr = it->value().if_array();
    if (arr == nullptr || arr->empty()) {
        throw config_error(std::string(key) + " must be a non-empty array of strings");
    }
    std::vector<std::string> out;
    for (const auto& item : *arr) {
        const auto* s = item.if_string();
        if (s == nullptr || s->empty()) {
            throw config_error(std::string(key) + " must contain only non-empty strings");
        }
        out.emplace_back(s->c_str(), s->size());
    }
    return out;
}

// A credential that rotates: `one` (a string, tried first) and `several` (a list), merged;
// nullopt when neither is given. Reasons name the key, never the value.
inline std::optional<std::vector<std::string>>
get_rotating_secrets(const boost::json::object& o, std::string_view one, std::string_view several) {
    std::optional<std::vector<std::string>> out = get_string_list(o, several);
    if (o.contains(one)) {
        if (!out) {
            out.emplace();
        }
        out->insert(out->begin(), get_string(o, one));
    }
    return out;
}

} // namespace wopbridge::json_config
