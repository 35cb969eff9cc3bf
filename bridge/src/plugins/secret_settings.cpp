#include "plugins/secret_settings.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

namespace wopbridge {
namespace {

namespace json = boost::json;

// A schema is untrusted: a hostile one must not recurse without end or mark without bound.
constexpr int max_depth = 32;
constexpr int max_ref_hops = 64;
constexpr std::size_t max_paths = 256;

bool marked(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v != nullptr && v->is_bool() && v->get_bool();
}

// "#" or "#/a/b~1c" inside the schema's own document; null for anything else.
const json::value* resolve_local(const json::value& root, std::string_view ref) {
    if (ref.empty() || ref.front() != '#') {
        return nullptr;
    }
    ref.remove_prefix(1);
    const json::value* at = &root;
    while (!ref.empty()) {
        if (ref.front() != '/') {
            return nullptr; // an $anchor fragment: not followed
        }
        ref.remove_prefix(1);
        const auto end = std::min(ref.find('/'), ref.size());
        std::string token;
        for (std::size_t i = 0; i < end; ++i) {
            if (ref[i] == '~' && i + 1 < end && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
                token += ref[i + 1] == '0' ? '~' : '/';
                ++i;
            } else {
                token += ref[i];
            }
        }
        ref.remove_prefix(end);
        if (const auto* o = at->if_object()) {
            at = o->if_contains(token);
        } else if (const auto* a = at->if_array()) {
            const bool digits = !token.empty() && token.size() < 10 &&
                                std::all_of(token.begin(), token.end(),
                                            [](char c) { return c >= '0' && c <= '9'; });
            at = digits && std::stoul(token) < a->size() ? &(*a)[std::stoul(token)] : nullptr;
        } else {
            at = nullptr;
        }
        if (at == nullptr) {
            return nullptr;
        }
    }
    return at;
}

struct schema_walk {
    const json::value& root;
    std::vector<secret_path> found;
    int hops = 0;

    void add(const secret_path& p) {
        if (found.size() < max_paths && std::find(found.begin(), found.end(), p) == found.end()) {
            found.push_back(p);
        }
    }

    void into(const json::value& sub, secret_path& path, secret_step step, int depth) {
        path.push_back(std::move(step));
        walk(sub, path, depth + 1);
        path.pop_back();
    }

    void walk(const json::value& schema, secret_path& path, int depth) {
        const auto* o = schema.if_object();
        if (o == nullptr || depth > max_depth || found.size() >= max_paths) {
            return;
        }
        if (marked(*o, "writeOnly") || marked(*o, "x-secret")) {
            add(path); // the whole value, whatever shape it has
            return;
        }
        if (const auto* ref = o->if_contains("$ref"); ref != nullptr && ref->is_string()) {
            if (const auto* target = resolve_local(root, ref->get_string());
                target != nullptr && ++hops <= max_ref_hops) {
                walk(*target, path, depth + 1);
            }
        }
        if (const auto* props = o->if_contains("properties"); props && props->is_object()) {
            for (const auto& kv : props->get_object()) {
                into(kv.value(), path,
                     {secret_step::kind::member, std::string(kv.key())}, depth);
            }
        }
        if (const auto* items = o->if_contains("items"); items != nullptr) {
            into(*items, path, {secret_step::kind::every_item, {}}, depth);
        }
        if (const auto* more = o->if_contains("additionalProperties"); more != nullptr) {
            into(*more, path, {secret_step::kind::every_member, {}}, depth);
        }
        for (const char* key : {"allOf", "anyOf", "oneOf"}) {
            if (const auto* list = o->if_contains(key); list && list->is_array()) {
                for (const auto& sub : list->get_array()) {
                    walk(sub, path, depth + 1);
                }
            }
        }
        for (const char* key : {"then", "else"}) {
            if (const auto* sub = o->if_contains(key); sub != nullptr) {
                walk(*sub, path, depth + 1);
            }
        }
    }
};

bool is_sealed(const json::value& v) {
    const auto* o = v.if_object();
    if (o == nullptr || o->size() != 1) {
        return false;
    }
    const auto* s = o->if_contains(sealed_key);
    return s != nullptr && s->is_string();
}

} // namespace

bool carries_sealed_key(const json::value& v) {
    if (const auto* o = v.if_object()) {
        for (const auto& kv : *o) {
            if (kv.key() == sealed_key || carries_sealed_key(kv.value())) {
                return true;
            }
        }
    } else if (const auto* a = v.if_array()) {
        return std::any_of(a->begin(), a->end(), carries_sealed_key);
    }
    return false;
}

namespace {

template <class Visit>
void at_path(json::value& v, const secret_path& p, std::size_t i, const Visit& visit) {
    if (is_sealed(v)) {
        return; // sealed by an enclosing path, or earlier (keep_sealed)
    }
    if (i == p.size()) {
        visit(v);
        return;
    }
    const auto& step = p[i];
    if (step.what == secret_step::kind::every_item) {
        if (auto* a = v.if_array()) {
            for (auto& item : *a) {
                at_path(item, p, i + 1, visit);
            }
        }
        return;
    }
    auto* o = v.if_object();
    if (o == nullptr) {
        return;
    }
    if (step.what == secret_step::kind::every_member) {
        for (auto& kv : *o) {
            at_path(kv.value(), p, i + 1, visit);
        }
    } else if (auto* child = o->if_contains(step.name)) {
        at_path(*child, p, i + 1, visit);
    }
}

// Enclosing paths first, so a nested mark inside a sealed value is never visited.
std::vector<secret_path> outermost_first(std::vector<secret_path> paths) {
    std::stable_sort(paths.begin(), paths.end(),
                     [](const secret_path& a, const secret_path& b) { return a.size() < b.size(); });
    return paths;
}

result<void> unseal_in_place(json::value& v, const secret_box& box, int depth) {
    if (depth > max_depth * 2) {
        return make_error_code(errc::invalid_argument);
    }
    if (is_sealed(v)) {
        auto plain = box.unseal(v.get_object().at(sealed_key).get_string());
        if (!plain) {
            return plain.error();
        }
        boost::system::error_code ec;
        auto inner = json::parse(*plain, ec);
        if (ec) {
            return make_error_code(errc::invalid_argument);
        }
        v = std::move(inner);
        return {};
    }
    if (auto* o = v.if_object()) {
        for (auto& kv : *o) {
            if (auto r = unseal_in_place(kv.value(), box, depth + 1); !r) {
                return r;
            }
        }
    } else if (auto* a = v.if_array()) {
        for (auto& item : *a) {
            if (auto r = unseal_in_place(item, box, depth + 1); !r) {
                return r;
            }
        }
    }
    return {};
}

void collect_strings(const json::value& v, std::vector<std::string>& out) {
    if (const auto* s = v.if_string()) {
        out.emplace_back(s->c_str(), s->size());
    } else if (const auto* a = v.if_array()) {
        for (const auto& item : *a) {
            collect_strings(item, out);
        }
    } else if (const auto* o = v.if_object()) {
        for (const auto& kv : *o) {
            collect_strings(kv.value(), out);
        }
    }
}

} // namespace

secret_fields secret_fields::from_schema(const json::value& schema) {
    schema_walk w{schema, {}, 0};
    secret_path path;
    w.walk(schema, path, 0);
    secret_fields out;
    out.paths_ = outermost_first(std::move(w.found));
    return out;
}

secret_fields secret_fields::from_schema_text(std::string_view schema_json) {
    boost::system::error_code ec;
    auto doc = json::parse(schema_json, ec);
    return ec ? secret_fields{} : from_schema(doc);
}

secret_fields secret_fields::every_setting() {
    secret_fields out;
    out.paths_.push_back({{secret_step::kind::every_member, {}}});
    return out;
}

std::vector<std::string> secret_fields::pointers() const {
    std::vector<std::string> out;
    for (const auto& p : paths_) {
        std::string s;
        for (const auto& step : p) {
            s += step.what == secret_step::kind::member       ? "/" + step.name
                 : step.what == secret_step::kind::every_item ? std::string("/[]")
                                                              : std::string("/*");
        }
        out.push_back(s.empty() ? "/" : s);
    }
    std::sort(out.begin(), out.end());
    return out;
}

result<sealed_settings> seal_secret_settings(std::string_view settings_json,
                                             const secret_fields& fields, const secret_box& box,
                                             random_source& random, seal_mode mode) {
    boost::system::error_code ec;
    auto doc = json::parse(settings_json.empty() ? std::string_view("{}") : settings_json, ec);
    if (ec || !doc.is_object()) {
        return make_error_code(errc::invalid_argument);
    }
    if (mode == seal_mode::intake && carries_sealed_key(doc)) {
        return make_error_code(errc::invalid_argument);
    }
    sealed_settings out;
    for (const auto& p : fields.paths()) {
        at_path(doc, p, 0, [&](json::value& v) {
            json::object sealed;
            sealed[sealed_key] = box.seal(json::serialize(v), random);
            v = std::move(sealed);
            out.changed = true;
        });
    }
    out.json = json::serialize(doc);
    return out;
}

result<std::string> unseal_secret_settings(std::string_view stored_json, const secret_box& box) {
    if (!holds_sealed_values(stored_json)) {
        return std::string(stored_json);
    }
    boost::system::error_code ec;
    auto doc = json::parse(stored_json, ec);
    if (ec) {
        return make_error_code(errc::invalid_argument);
    }
    if (auto r = unseal_in_place(doc, box, 0); !r) {
        return make_error_code(errc::invalid_argument);
    }
    return json::serialize(doc);
}

result<std::string> open_stored_settings(std::string_view stored_json, const secret_box* box) {
    if (!holds_sealed_values(stored_json)) {
        return std::string(stored_json);
    }
    if (box == nullptr) {
        return make_error_code(errc::unsupported);
    }
    return unseal_secret_settings(stored_json, *box);
}

bool holds_sealed_values(std::string_view json) noexcept {
    return json.find("\"$sealed\"") != std::string_view::npos;
}

std::vector<std::string> secret_values(std::string_view plain_json, const secret_fields& fields) {
    std::vector<std::string> out;
    if (fields.empty()) {
        return out;
    }
    boost::system::error_code ec;
    auto doc = json::parse(plain_json, ec);
    if (ec) {
        return out;
    }
    for (const auto& p : fields.paths()) {
        at_path(doc, p, 0, [&](json::value& v) { collect_strings(v, out); });
    }
    return out;
}

std::string redact_values(std::string text, const std::vector<std::string>& values) {
    constexpr std::string_view marker = "[redacted]";
    for (const auto& v : values) {
        if (v.empty()) {
            continue;
        }
        for (auto at = text.find(v); at != std::string::npos; at = text.find(v, at)) {
            text.replace(at, v.size(), marker);
            at += marker.size();
        }
    }
    return text;
}

} // namespace wopbridge
