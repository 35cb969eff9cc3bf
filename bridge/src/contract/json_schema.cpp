#include "contract/json_schema.hpp"

#include "contract/json_schema_internal.hpp"

#include <wopbridge/http_util.hpp>

#include <boost/json/parse.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace wopbridge {

// The registry's own code uses the validator's internals throughout.
using namespace schema_detail;

std::string_view to_string(schema_error_kind k) noexcept {
    switch (k) {
    case schema_error_kind::invalid:
        return "invalid";
    case schema_error_kind::unresolved_ref:
        return "unresolved_ref";
    case schema_error_kind::bad_schema:
        return "bad_schema";
    case schema_error_kind::limit:
        return "limit";
    }
    return "invalid";
}

bool has_errors(const std::vector<validation_error>& errors,
                bool tolerate_unresolved_refs) noexcept {
    for (const auto& e : errors) {
        if (!(tolerate_unresolved_refs && e.kind == schema_error_kind::unresolved_ref)) {
            return true;
        }
    }
    return false;
}

std::string format_errors(const std::vector<validation_error>& errors) {
    std::string out;
    for (const auto& e : errors) {
        out += e.instance_path.empty() ? std::string("(root)") : e.instance_path;
        out += ": ";
        out += e.message;
        if (e.kind != schema_error_kind::invalid) {
            out += " (";
            out += to_string(e.kind);
            out += ")";
        }
        out += " [at ";
        out += e.schema_path.empty() ? std::string("#") : e.schema_path;
        out += "]\n";
    }
    return out;
}

// ---- the registry -------------------------------------------------------------------------------

// Registers embedded $id resources and $anchors below `node`.
void schema_registry::impl::walk(const json::value& node, const std::string& outer_base,
                                  int depth) {
    if (depth > max_walk_depth) {
        return;
    }
    if (node.is_array()) {
        for (const auto& e : node.get_array()) {
            walk(e, outer_base, depth + 1);
        }
        return;
    }
    if (!node.is_object()) {
        return;
    }
    const auto& obj = node.get_object();
    std::string base = outer_base;
    if (auto it = obj.find("$id"); it != obj.end() && it->value().is_string()) {
        if (auto r = resolve_uri(outer_base, it->value().get_string())) {
            base = split_fragment(*r).first;
            by_uri.try_emplace(base, location{&node, outer_base});
        }
    }
    if (auto it = obj.find("$anchor"); it != obj.end() && it->value().is_string()) {
        by_uri.try_emplace(base + "#" + std::string(it->value().get_string()),
                           location{&node, outer_base});
    }
    for (const auto& kv : obj) {
        auto k = kv.key();
        if (k == "enum" || k == "const" || k == "default" || k == "examples") {
            continue; // data, not schemas: an "$id" in there identifies nothing
        }
        walk(kv.value(), base, depth + 1);
    }
}

result<location, schema_registry::impl::lookup_failure>
schema_registry::impl::lookup(const std::unordered_map<std::string, location>& map,
                              std::string_view uri) const {
    auto unresolved = [](std::string message) {
        return lookup_failure{schema_error_kind::unresolved_ref, std::move(message)};
    };
    auto bad = [](std::string message) {
        return lookup_failure{schema_error_kind::bad_schema, std::move(message)};
    };
    auto [doc, fragment_raw] = split_fragment(uri);
    auto it = map.find(doc);
    if (it == map.end()) {
        return unresolved("no schema document '" + doc + "' in the registry");
    }
    auto fragment = http::percent_decode(fragment_raw);
    if (!fragment) {
        return bad("malformed percent-encoding in fragment");
    }
    if (fragment->empty()) {
        return it->second;
    }
    if (fragment->front() != '/') {
        auto a = by_uri.find(base_of(it->second) + "#" + *fragment);
        if (a == by_uri.end()) {
            return unresolved("no anchor '" + *fragment + "' in '" + doc + "'");
        }
        return a->second;
    }
    auto tokens = pointer_tokens(*fragment);
    if (!tokens) {
        return bad("malformed JSON Pointer '" + *fragment + "'");
    }
    location loc = it->second;
    for (const auto& t : *tokens) {
        loc.outer_base = base_of(loc);
        const json::value* next = nullptr;
        if (loc.node->is_object()) {
            auto f = loc.node->get_object().find(t);
            if (f != loc.node->get_object().end()) {
                next = &f->value();
            }
        } else if (loc.node->is_array()) {
            const auto& arr = loc.node->get_array();
            bool ok =
                !t.empty() && t.size() < 19 &&
                std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                (t.size() == 1 || t[0] != '0');
            if (ok) {
                auto idx = std::stoull(t);
                if (idx < arr.size()) {
                    next = &arr[idx];
                }
            }
        }
        if (next == nullptr) {
            return bad("JSON Pointer '" + *fragment + "' does not exist in '" + doc + "'");
        }
        loc.node = next;
    }
    return loc;
}

// The base URI in effect inside `loc.node` (after its own $id).
std::string schema_registry::impl::base_of(const location& loc) {
    if (loc.node->is_object()) {
        const auto& obj = loc.node->get_object();
        if (auto it = obj.find("$id"); it != obj.end() && it->value().is_string()) {
            if (auto r = resolve_uri(loc.outer_base, it->value().get_string())) {
                return split_fragment(*r).first;
            }
        }
    }
    return loc.outer_base;
}

schema_registry::schema_registry(schema_limits limits) : impl_(std::make_unique<impl>()) {
    impl_->limits = limits;
}
schema_registry::~schema_registry() = default;
schema_registry::schema_registry(schema_registry&&) noexcept = default;
schema_registry& schema_registry::operator=(schema_registry&&) noexcept = default;

result<void> schema_registry::add(json::value document, std::string name) {
    if (!document.is_object() && !document.is_bool()) {
        return make_error_code(errc::invalid_argument);
    }
    if (!name.empty() && impl_->by_name.count(name) != 0) {
        return make_error_code(errc::already_exists);
    }
    // An absolute-URI name is the document's retrieval URI (e.g. a well-known remote).
    std::string retrieval =
        boost::urls::parse_uri(name)
            ? split_fragment(name).first
            : std::string(synthetic_base) +
                  (name.empty() ? "doc-" + std::to_string(impl_->documents.size()) + ".json"
                                : name);
    // The retrieval URI must itself parse, or relative resolution against it fails later.
    if (!boost::urls::parse_uri(retrieval)) {
        return make_error_code(errc::invalid_argument);
    }
    location root{nullptr, retrieval};
    std::string base = retrieval;
    if (document.is_object()) {
        const auto& obj = document.get_object();
        if (auto it = obj.find("$id"); it != obj.end()) {
            if (!it->value().is_string()) {
                return make_error_code(errc::invalid_argument);
            }
            auto r = resolve_uri(retrieval, it->value().get_string());
            if (!r) {
                return make_error_code(errc::invalid_argument);
            }
            base = split_fragment(*r).first;
        }
    }
    if (impl_->by_uri.count(base) != 0) {
        return make_error_code(errc::already_exists);
    }
    auto doc = std::make_unique<json::value>(std::move(document));
    root.node = doc.get();
    impl_->by_uri.emplace(base, root);
    if (base != retrieval) {
        impl_->by_uri.try_emplace(retrieval, root);
    }
    if (!name.empty()) {
        impl_->by_name.emplace(name, root);
    }
    impl_->walk(*doc, retrieval, 0);
    impl_->documents.push_back(std::move(doc));
    return {};
}

result<void> schema_registry::add_file(const std::filesystem::path& file, std::string name) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return make_error_code(errc::not_found);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    json::parse_options opts;
    opts.max_depth = 1000;
    auto doc = json::parse(ss.str(), ec, {}, opts);
    if (ec) {
        return make_error_code(errc::invalid_argument);
    }
    return add(std::move(doc), name.empty() ? file.filename().string() : std::move(name));
}

result<std::size_t> schema_registry::add_directory(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        return make_error_code(errc::not_found);
    }
    std::vector<std::filesystem::path> files;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        auto fname = it->path().filename().string();
        constexpr std::string_view suffix = ".schema.json";
        if (it->is_regular_file() && fname.size() > suffix.size() &&
            fname.compare(fname.size() - suffix.size(), suffix.size(), suffix) == 0) {
            files.push_back(it->path());
        }
    }
    if (ec) {
        return make_error_code(errc::internal);
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        auto r = add_file(f, std::filesystem::relative(f, dir).generic_string());
        if (!r) {
            return r.error();
        }
    }
    return files.size();
}

namespace {

// Turns a validate() reference into an absolute URI: a registered name maps to its document's
// base; anything else must already be an absolute URI.
std::optional<std::pair<location, std::string>> entry_point(const schema_registry::impl& reg,
                                                            std::string_view ref) {
    auto [doc, fragment] = split_fragment(ref);
    if (auto it = reg.by_name.find(doc); it != reg.by_name.end()) {
        return std::pair{it->second, fragment};
    }
    return std::nullopt;
}

} // namespace

bool schema_registry::contains(std::string_view ref) const {
    if (auto named = entry_point(*impl_, ref)) {
        std::string uri = impl::base_of(named->first);
        return impl_->lookup(impl_->by_uri, uri + "#" + named->second).has_value();
    }
    return impl_->lookup(impl_->by_uri, ref).has_value();
}

std::vector<validation_error> schema_registry::validate(const json::value& instance,
                                                        std::string_view ref) const {
    std::vector<validation_error> errors;
    auto named = entry_point(*impl_, ref);
    auto start =
        named ? impl_->lookup(impl_->by_uri, impl::base_of(named->first) + "#" + named->second)
              : impl_->lookup(impl_->by_uri, ref);
    if (!start) {
        errors.push_back(
            {"", "", "cannot resolve schema '" + std::string(ref) + "': " + start.error().message,
             start.error().kind});
        return errors;
    }
    try {
        evaluator ev(*impl_, errors);
        ev.eval(instance, *start, 0);
    } catch (const std::exception& e) {
        // Only allocation failures can get here; never let them escape into a caller.
        errors.push_back(
            {"", "", std::string("validation aborted: ") + e.what(), schema_error_kind::limit});
    }
    return errors;
}

std::vector<validation_error> validate_against(const json::value& instance,
                                               const json::value& schema, schema_limits limits) {
    schema_registry reg(limits);
    if (auto r = reg.add(schema, "schema.json"); !r) {
        return {{"", "", "not a schema (must be an object or a boolean, with a valid $id)",
                 schema_error_kind::bad_schema}};
    }
    return reg.validate(instance, "schema.json");
}

} // namespace wopbridge
