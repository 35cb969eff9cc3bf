// The evaluator's core: the per-schema walk, keyword dispatch, $ref, type and the applicators
// (allOf/anyOf/oneOf/not/if-then-else).
#include "contract/json_schema_internal.hpp"

namespace wopbridge::schema_detail {

bool evaluator::eval(const json::value& inst, const location& at, int depth) {
    // Once a limit is hit the outcome is a `limit` error whatever else happens: stop all
    // work. The work budget exists because branching $ref cycles (anyOf of two refs back to
    // itself) are exponential within any depth limit.
    if (exhausted_) {
        return false;
    }
    if (++steps_ > reg_.limits.max_evaluations) {
        return stop("validation stopped after " +
                    std::to_string(reg_.limits.max_evaluations) + " subschema evaluations");
    }
    if (depth > reg_.limits.max_depth) {
        return stop("schema nesting deeper than " + std::to_string(reg_.limits.max_depth) +
                    " (a recursive $ref?)");
    }
    const json::value& schema = *at.node;
    if (schema.is_bool()) {
        if (!schema.get_bool()) {
            report(schema_error_kind::invalid, "the schema 'false' allows no value");
            return false;
        }
        return true;
    }
    if (!schema.is_object()) {
        report(schema_error_kind::bad_schema, "a schema must be an object or a boolean");
        return false;
    }
    const auto& s = schema.get_object();
    std::string base = at.outer_base;
    if (auto it = s.find("$id"); it != s.end()) {
        if (!it->value().is_string()) {
            report(schema_error_kind::bad_schema, "$id must be a string");
            return false;
        }
        auto r = resolve_uri(at.outer_base, it->value().get_string());
        if (!r) {
            report(schema_error_kind::bad_schema, "$id is not a valid URI reference");
            return false;
        }
        base = split_fragment(*r).first;
    }

    bool ok = true;
    for (const auto& kv : s) {
        ok = keyword(inst, s, kv.key(), kv.value(), base, depth) && ok;
    }
    return ok;
}

bool evaluator::stop(std::string message) {
    exhausted_ = true;
    report(schema_error_kind::limit, std::move(message));
    return false;
}

void evaluator::report(schema_error_kind kind, std::string message) {
    out_->push_back({instance_path_, schema_path_, std::move(message), kind});
}

void evaluator::keep_hard_errors(std::vector<validation_error>& branch, bool* had_unresolved) {
    for (auto& e : branch) {
        if (e.kind != schema_error_kind::invalid) {
            if (e.kind == schema_error_kind::unresolved_ref && had_unresolved) {
                *had_unresolved = true;
            }
            out_->push_back(std::move(e));
        }
    }
}

bool evaluator::probe(const json::value& inst, const json::value& sub, const std::string& base,
                      int depth, std::vector<validation_error>& errors) {
    auto* saved = out_;
    out_ = &errors;
    bool ok = eval(inst, location{&sub, base}, depth + 1);
    out_ = saved;
    return ok;
}

bool evaluator::sub(const json::value& inst, const json::value& schema, const std::string& base,
                    int depth) {
    return eval(inst, location{&schema, base}, depth + 1);
}

bool evaluator::bad(std::string message) {
    report(schema_error_kind::bad_schema, std::move(message));
    return false;
}

bool evaluator::keyword(const json::value& inst, const json::object& s, std::string_view k,
                        const json::value& v, const std::string& base, int depth) {
    path_mark kw(schema_path_, k);
    if (k == "$ref") {
        return ref(inst, v, base, depth);
    }
    if (k == "type") {
        return type(inst, v);
    }
    if (k == "enum") {
        if (!v.is_array()) {
            return bad("enum must be an array");
        }
        for (const auto& e : v.get_array()) {
            if (json_equal(inst, e)) {
                return true;
            }
        }
        report(schema_error_kind::invalid, "value is not one of the enum values");
        return false;
    }
    if (k == "const") {
        if (json_equal(inst, v)) {
            return true;
        }
        report(schema_error_kind::invalid, "value does not equal the const value");
        return false;
    }
    if (k == "allOf" || k == "anyOf" || k == "oneOf") {
        return combinator(inst, k, v, base, depth);
    }
    if (k == "not") {
        std::vector<validation_error> branch;
        bool matched = probe(inst, v, base, depth, branch);
        bool unresolved = false;
        keep_hard_errors(branch, &unresolved);
        if (matched && !unresolved) {
            report(schema_error_kind::invalid, "value matches the schema in 'not'");
            return false;
        }
        return true;
    }
    if (k == "if") {
        return conditional(inst, s, v, base, depth);
    }
    if (k == "then" || k == "else") {
        return true; // evaluated by "if"
    }
    if (is_numeric(inst)) {
        return number_keyword(inst, k, v);
    }
    if (inst.is_string()) {
        return string_keyword(inst.get_string(), k, v);
    }
    if (inst.is_array()) {
        return array_keyword(inst.get_array(), s, k, v, base, depth);
    }
    if (inst.is_object()) {
        return object_keyword(inst.get_object(), s, k, v, base, depth);
    }
    return true;
}

bool evaluator::ref(const json::value& inst, const json::value& v, const std::string& base,
                    int depth) {
    if (!v.is_string()) {
        return bad("$ref must be a string");
    }
    auto target = resolve_uri(base, v.get_string());
    if (!target) {
        return bad("$ref is not a valid URI reference");
    }
    auto loc = reg_.lookup(reg_.by_uri, *target);
    if (!loc) {
        if (loc.error().kind == schema_error_kind::unresolved_ref) {
            // Reported distinctly and treated as passing: see the header.
            report(schema_error_kind::unresolved_ref, "unresolved $ref: " + loc.error().message);
            return true;
        }
        return bad("bad $ref: " + loc.error().message);
    }
    return eval(inst, *loc, depth + 1);
}

bool evaluator::type(const json::value& inst, const json::value& v) {
    auto matches = [&](std::string_view t, bool& known) {
        known = true;
        if (t == "null") {
            return inst.is_null();
        }
        if (t == "boolean") {
            return inst.is_bool();
        }
        if (t == "object") {
            return inst.is_object();
        }
        if (t == "array") {
            return inst.is_array();
        }
        if (t == "number") {
            return is_numeric(inst);
        }
        if (t == "integer") {
            return is_integral(inst);
        }
        if (t == "string") {
            return inst.is_string();
        }
        known = false;
        return false;
    };
    bool known = true;
    if (v.is_string()) {
        if (matches(v.get_string(), known)) {
            return true;
        }
        if (!known) {
            return bad("unknown type name");
        }
        report(schema_error_kind::invalid,
               "expected type " + std::string(v.get_string()) + ", got " + kind_name(inst));
        return false;
    }
    if (!v.is_array()) {
        return bad("type must be a string or an array of strings");
    }
    std::string names;
    for (const auto& t : v.get_array()) {
        if (!t.is_string()) {
            return bad("type must be a string or an array of strings");
        }
        if (matches(t.get_string(), known)) {
            return true;
        }
        if (!known) {
            return bad("unknown type name");
        }
        names += names.empty() ? "" : "|";
        names += t.get_string();
    }
    report(schema_error_kind::invalid, "expected type " + names + ", got " + kind_name(inst));
    return false;
}

std::string evaluator::kind_name(const json::value& inst) {
    switch (inst.kind()) {
    case json::kind::null:
        return "null";
    case json::kind::bool_:
        return "boolean";
    case json::kind::string:
        return "string";
    case json::kind::array:
        return "array";
    case json::kind::object:
        return "object";
    default:
        return is_integral(inst) ? "integer" : "number";
    }
}

bool evaluator::combinator(const json::value& inst, std::string_view k, const json::value& v,
                           const std::string& base, int depth) {
    if (!v.is_array() || v.get_array().empty()) {
        return bad(std::string(k) + " must be a non-empty array of schemas");
    }
    const auto& arr = v.get_array();
    if (k == "allOf") {
        bool ok = true;
        for (std::size_t i = 0; i < arr.size(); ++i) {
            path_mark m(schema_path_, i);
            ok = sub(inst, arr[i], base, depth) && ok;
        }
        return ok;
    }
    std::size_t passed = 0;
    std::size_t first_passed = 0;
    std::size_t second_passed = 0;
    for (std::size_t i = 0; i < arr.size(); ++i) {
        path_mark m(schema_path_, i);
        std::vector<validation_error> branch;
        bool ok = probe(inst, arr[i], base, depth, branch);
        keep_hard_errors(branch);
        if (ok) {
            ++passed;
            if (passed == 1) {
                first_passed = i;
            } else if (passed == 2) {
                second_passed = i;
            }
            if (k == "anyOf") {
                return true; // no annotation collection, so short-circuit is fine
            }
        }
    }
    if (k == "anyOf") {
        report(schema_error_kind::invalid,
               "value matches none of the " + std::to_string(arr.size()) + " anyOf schemas");
        return false;
    }
    if (passed == 1) {
        return true;
    }
    if (passed == 0) {
        report(schema_error_kind::invalid,
               "value matches none of the " + std::to_string(arr.size()) + " oneOf schemas");
    } else {
        report(schema_error_kind::invalid, "value matches more than one oneOf schema (" +
                                               std::to_string(first_passed) + " and " +
                                               std::to_string(second_passed) + ")");
    }
    return false;
}

bool evaluator::conditional(const json::value& inst, const json::object& s, const json::value& v,
                            const std::string& base, int depth) {
    std::vector<validation_error> branch;
    bool cond = probe(inst, v, base, depth, branch);
    keep_hard_errors(branch);
    std::string_view next = cond ? "then" : "else";
    auto it = s.find(next);
    if (it == s.end()) {
        return true;
    }
    // Errors point at then/else, not at if.
    auto saved = schema_path_;
    schema_path_.resize(schema_path_.size() - 3); // drop "/if"
    append_token(schema_path_, next);
    bool ok = sub(inst, it->value(), base, depth);
    schema_path_ = std::move(saved);
    return ok;
}

} // namespace wopbridge::schema_detail
