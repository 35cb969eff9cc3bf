// Keywords on arrays (items, prefixItems, contains, uniqueItems, sizes) and objects (properties,
// patternProperties, additionalProperties, required, dependent*, propertyNames, sizes).
#include "contract/json_schema_internal.hpp"

#include <unordered_map>

namespace wopbridge::schema_detail {

bool evaluator::array_keyword(const json::array& arr, const json::object& s, std::string_view k,
                              const json::value& v, const std::string& base, int depth) {
    if (k == "minItems" || k == "maxItems") {
        return count_keyword(k, v, k == "minItems", arr.size(), "array", "items");
    }
    if (k == "uniqueItems") {
        if (!v.is_bool()) {
            return bad("uniqueItems must be a boolean");
        }
        if (!v.get_bool()) {
            return true;
        }
        std::unordered_map<std::string, std::size_t> seen;
        for (std::size_t i = 0; i < arr.size(); ++i) {
            std::string key;
            canonical(arr[i], key, 0);
            auto [it, inserted] = seen.emplace(std::move(key), i);
            if (!inserted) {
                report(schema_error_kind::invalid, "items " + std::to_string(it->second) +
                                                       " and " + std::to_string(i) +
                                                       " are equal (uniqueItems)");
                return false;
            }
        }
        return true;
    }
    if (k == "prefixItems") {
        if (!v.is_array()) {
            return bad("prefixItems must be an array of schemas");
        }
        const auto& ps = v.get_array();
        bool ok = true;
        for (std::size_t i = 0; i < ps.size() && i < arr.size(); ++i) {
            path_mark sm(schema_path_, i);
            path_mark im(instance_path_, i);
            ok = sub(arr[i], ps[i], base, depth) && ok;
        }
        return ok;
    }
    if (k == "items") {
        if (v.is_array()) {
            return bad("items must be a schema (the array form is prefixItems in 2020-12)");
        }
        std::size_t start = 0;
        if (auto it = s.find("prefixItems"); it != s.end() && it->value().is_array()) {
            start = it->value().get_array().size();
        }
        bool ok = true;
        for (std::size_t i = start; i < arr.size(); ++i) {
            path_mark im(instance_path_, i);
            ok = sub(arr[i], v, base, depth) && ok;
        }
        return ok;
    }
    if (k == "contains") {
        std::optional<std::uint64_t> min_c = 1;
        std::optional<std::uint64_t> max_c;
        if (auto it = s.find("minContains"); it != s.end()) {
            min_c = non_negative_int(it->value());
            if (!min_c) {
                return bad("minContains must be a non-negative integer");
            }
        }
        if (auto it = s.find("maxContains"); it != s.end()) {
            max_c = non_negative_int(it->value());
            if (!max_c) {
                return bad("maxContains must be a non-negative integer");
            }
        }
        std::uint64_t count = 0;
        for (std::size_t i = 0; i < arr.size(); ++i) {
            std::vector<validation_error> branch;
            path_mark im(instance_path_, i);
            if (probe(arr[i], v, base, depth, branch)) {
                ++count;
            }
            keep_hard_errors(branch);
        }
        if (count < *min_c) {
            report(schema_error_kind::invalid, "array contains " + std::to_string(count) +
                                                   " matching items, fewer than " +
                                                   std::to_string(*min_c));
            return false;
        }
        if (max_c && count > *max_c) {
            report(schema_error_kind::invalid, "array contains " + std::to_string(count) +
                                                   " matching items, more than maxContains " +
                                                   std::to_string(*max_c));
            return false;
        }
        return true;
    }
    return true;
}

bool evaluator::object_keyword(const json::object& obj, const json::object& s, std::string_view k,
                               const json::value& v, const std::string& base, int depth) {
    if (k == "required") {
        if (!v.is_array()) {
            return bad("required must be an array of strings");
        }
        auto all_present =
            require_names(obj, v.get_array(), "required must be an array of strings",
                          [](std::string_view name) {
                              return "missing required property '" + std::string(name) + "'";
                          });
        return all_present.value_or(false);
    }
    if (k == "properties") {
        if (!v.is_object()) {
            return bad("properties must be an object");
        }
        bool ok = true;
        for (const auto& p : v.get_object()) {
            auto it = obj.find(p.key());
            if (it == obj.end()) {
                continue;
            }
            path_mark sm(schema_path_, p.key());
            path_mark im(instance_path_, p.key());
            ok = sub(it->value(), p.value(), base, depth) && ok;
        }
        return ok;
    }
    if (k == "patternProperties") {
        if (!v.is_object()) {
            return bad("patternProperties must be an object");
        }
        bool ok = true;
        for (const auto& p : v.get_object()) {
            path_mark sm(schema_path_, p.key());
            for (const auto& m : obj) {
                int r = search(p.key(), m.key());
                if (r < 0) {
                    return false;
                }
                if (r == 1) {
                    path_mark im(instance_path_, m.key());
                    ok = sub(m.value(), p.value(), base, depth) && ok;
                }
            }
        }
        return ok;
    }
    if (k == "additionalProperties") {
        const json::object* props = nullptr;
        const json::object* patterns = nullptr;
        if (auto it = s.find("properties"); it != s.end() && it->value().is_object()) {
            props = &it->value().get_object();
        }
        if (auto it = s.find("patternProperties"); it != s.end() && it->value().is_object()) {
            patterns = &it->value().get_object();
        }
        bool ok = true;
        for (const auto& m : obj) {
            if (props && props->contains(m.key())) {
                continue;
            }
            bool matched = false;
            if (patterns) {
                for (const auto& p : *patterns) {
                    auto c = reg_.patterns.get(std::string(p.key()),
                                               reg_.limits.max_pattern_length);
                    if (!c.re) {
                        continue; // reported by patternProperties
                    }
                    if (search_pattern(*c.re, m.key(), reg_.limits.max_pattern_subject) ==
                        match_result::match) {
                        matched = true; // failures were reported by patternProperties
                        break;
                    }
                }
            }
            if (matched) {
                continue;
            }
            path_mark im(instance_path_, m.key());
            if (v.is_bool() && !v.get_bool()) {
                report(schema_error_kind::invalid, "property is not allowed "
                                                   "(additionalProperties: false)");
                ok = false;
                continue;
            }
            ok = sub(m.value(), v, base, depth) && ok;
        }
        return ok;
    }
    if (k == "propertyNames") {
        bool ok = true;
        for (const auto& m : obj) {
            path_mark im(instance_path_, m.key());
            ok = sub(json::value(m.key()), v, base, depth) && ok;
        }
        return ok;
    }
    if (k == "minProperties" || k == "maxProperties") {
        return count_keyword(k, v, k == "minProperties", obj.size(), "object", "properties");
    }
    if (k == "dependentRequired") {
        if (!v.is_object()) {
            return bad("dependentRequired must be an object");
        }
        bool ok = true;
        for (const auto& d : v.get_object()) {
            if (!d.value().is_array()) {
                return bad("dependentRequired values must be arrays of strings");
            }
            if (!obj.contains(d.key())) {
                continue;
            }
            auto all_present = require_names(
                obj, d.value().get_array(), "dependentRequired values must be arrays of strings",
                [&d](std::string_view name) {
                    return "property '" + std::string(name) + "' is required when '" +
                           std::string(d.key()) + "' is present";
                });
            if (!all_present) {
                return false;
            }
            ok = *all_present && ok;
        }
        return ok;
    }
    if (k == "dependentSchemas") {
        if (!v.is_object()) {
            return bad("dependentSchemas must be an object");
        }
        bool ok = true;
        for (const auto& d : v.get_object()) {
            if (!obj.contains(d.key())) {
                continue;
            }
            path_mark sm(schema_path_, d.key());
            ok = sub(json::value(obj), d.value(), base, depth) && ok;
        }
        return ok;
    }
    return true;
}

bool evaluator::count_keyword(std::string_view k, const json::value& v, bool is_min,
                              std::size_t count, std::string_view container,
                              std::string_view unit) {
    auto n = non_negative_int(v);
    if (!n) {
        return bad(std::string(k) + " must be a non-negative integer");
    }
    bool ok = is_min ? count >= *n : count <= *n;
    if (!ok) {
        report(schema_error_kind::invalid, std::string(container) + " has " +
                                               std::to_string(count) + " " + std::string(unit) +
                                               ", violating " + std::string(k) + " " +
                                               std::to_string(*n));
    }
    return ok;
}

std::optional<bool> evaluator::require_names(
    const json::object& obj, const json::array& names, std::string_view bad_message,
    const std::function<std::string(std::string_view)>& missing_message) {
    bool ok = true;
    for (const auto& name : names) {
        if (!name.is_string()) {
            bad(std::string(bad_message));
            return std::nullopt;
        }
        if (!obj.contains(name.get_string())) {
            report(schema_error_kind::invalid, missing_message(name.get_string()));
            ok = false;
        }
    }
    return ok;
}

} // namespace wopbridge::schema_detail
