// Keywords on arrays (items, prefixItems, contains, uniqueItems, sizes) and objects (properties,
// patternProperties, additionalProperties, required, dependent*, propertyNames, sizes).
#include "contract/json_schema_internal.hpp"

#include <unordered_map>

namespace wopbridge::schema_detail {

bool evaluator::array_keyword(const json::array& arr, const json::object& s, std::string_view k,
                   const json::value& v, const std::string& base, int depth) {
    if (k == "minItems" || k == "maxItems") {
        auto n = non_negative_int(v);
        if (!n) {
            return bad(std::string(k) + " must be a non-negative integer");
        }
        bool ok = k == "minItems" ? arr.size() >= *n : arr.size() <= *n;
        if (!ok) {
            report(schema_error_kind::invalid, "array has " + std::to_string(arr.size()) +
                                                   " items, violating " + std::string(k) + " " +
                                                   std::to_string(*n));
        }
        return ok;
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
        bool ok = true;
        for (const auto& name : v.get_array()) {
            if (!name.is_string()) {
                return bad("required must be an array of strings");
            }
            if (!obj.contains(name.get_string())) {
                report(schema_error_kind::invalid,
                       "missing required property '" + std::string(name.get_string()) + "'");
                ok = false;
            }
        }
        return ok;
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
        auto n = non_negative_int(v);
        if (!n) {
            return bad(std::string(k) + " must be a non-negative integer");
        }
        bool ok = k == "minProperties" ? obj.size() >= *n : obj.size() <= *n;
        if (!ok) {
            report(schema_error_kind::invalid, "object has " + std::to_string(obj.size()) +
                                                   " properties, violating " + std::string(k) +
                                                   " " + std::to_string(*n));
        }
        return ok;
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
            for (const auto& name : d.value().get_array()) {
                if (!name.is_string()) {
                    return bad("dependentRequired values must be arrays of strings");
                }
                if (!obj.contains(name.get_string())) {
                    report(schema_error_kind::invalid,
                           "property '" + std::string(name.get_string()) +
                               "' is required when '" + std::string(d.key()) + "' is present");
                    ok = false;
                }
            }
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

} // namespace wopbridge::schema_detail
