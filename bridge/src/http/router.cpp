#include "http/router.hpp"

#include <wopbridge/http_util.hpp>

#include <vector>

namespace wopbridge::http {

namespace {

std::vector<std::string_view> split(std::string_view path) {
    std::vector<std::string_view> out;
    if (path.empty() || path.front() != '/') {
        return out;
    }
    path.remove_prefix(1);
    while (true) {
        auto slash = path.find('/');
        out.push_back(path.substr(0, slash));
        if (slash == std::string_view::npos) {
            break;
        }
        path.remove_prefix(slash + 1);
    }
    return out;
}

// Matches one pattern against the path segments; fills params.
bool match_pattern(const route& r, const std::vector<std::string_view>& segs,
                   std::string_view path, std::map<std::string, std::string>& params) {
    auto pat = split(r.pattern);
    if (r.greedy_tail) {
        if (segs.size() < pat.size()) {
            return false;
        }
    } else if (segs.size() != pat.size()) {
        return false;
    }
    std::map<std::string, std::string> found;
    for (std::size_t i = 0; i < pat.size(); ++i) {
        auto p = pat[i];
        bool is_param = p.size() > 2 && p.front() == '{' && p.back() == '}';
        if (!is_param) {
            if (p != segs[i]) {
                return false;
            }
            continue;
        }
        std::string name(p.substr(1, p.size() - 2));
        if (r.greedy_tail && i + 1 == pat.size()) {
            // The rest of the path, from this segment on.
            auto offset = static_cast<std::size_t>(segs[i].data() - path.data());
            auto rest = path.substr(offset);
            if (rest.empty()) {
                return false;
            }
            found[name] = std::string(rest);
            continue;
        }
        if (segs[i].empty()) {
            return false;
        }
        found[name] = percent_decode_lenient(segs[i]);
    }
    params = std::move(found);
    return true;
}

} // namespace

route_match match_route(std::span<const route> table, std::string_view method,
                        std::string_view path) {
    auto segs = split(path);
    route_match out;
    std::string allow;
    for (const auto& r : table) {
        std::map<std::string, std::string> params;
        if (!match_pattern(r, segs, path, params)) {
            continue;
        }
        if (r.method == method) {
            // A more specific pattern later in the table (e.g. /events/poll vs greedy) never
            // collides here: literal segments decide first.
            out.matched = &r;
            out.status = 200;
            out.params = std::move(params);
            return out;
        }
        if (allow.find(r.method) == std::string::npos) {
            if (!allow.empty()) {
                allow += ", ";
            }
            allow += r.method;
        }
    }
    if (!allow.empty()) {
        out.status = 405;
        out.allow = std::move(allow);
    }
    return out;
}

} // namespace wopbridge::http
