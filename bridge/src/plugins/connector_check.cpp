#include "plugins/connector_check.hpp"

#include "plugins/check_phases.hpp"
#include "plugins/check_sandbox.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace wopbridge {
namespace {

bool failed(const connector_check_report& r, std::string_view prefix) {
    return std::any_of(r.checks.begin(), r.checks.end(), [&](const check_line& l) {
        return l.result == check_result::fail && l.name.rfind(prefix, 0) == 0;
    });
}

bool has(const connector_check_report& r, std::string_view name, check_result result) {
    return std::any_of(r.checks.begin(), r.checks.end(), [&](const check_line& l) {
        return l.result == result && l.name == name;
    });
}

} // namespace

bool parse_probe_request(std::string_view text, probe_request& out, std::string& error) {
    out = probe_request{};
    std::size_t pos = 0;
    auto next_line = [&](std::string& line) {
        if (pos >= text.size()) {
            return false;
        }
        auto nl = text.find('\n', pos);
        const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
        line.assign(text.substr(pos, end - pos));
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        return true;
    };
    std::string line;
    if (!next_line(line) || line.empty()) {
        error = "probe request: the first line must be 'METHOD TARGET'";
        return false;
    }
    const auto sp = line.find(' ');
    if (sp == std::string::npos || sp == 0) {
        error = "probe request: the first line must be 'METHOD TARGET'";
        return false;
    }
    out.method = line.substr(0, sp);
    std::string target = line.substr(sp + 1);
    if (auto sp2 = target.find(' '); sp2 != std::string::npos) {
        target.resize(sp2); // tolerate a trailing "HTTP/1.1"
    }
    if (target.empty() || target.front() != '/') {
        error = "probe request: TARGET must start with '/'";
        return false;
    }
    out.target = target;
    for (;;) {
        if (!next_line(line) || line.empty()) {
            break;
        }
        const auto colon = line.find(':');
        if (colon == std::string::npos || colon == 0) {
            error = "probe request: header line without 'name: value'";
            return false;
        }
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char ch) { return std::tolower(ch); });
        std::string value = line.substr(colon + 1);
        const auto first = value.find_first_not_of(" \t");
        value = first == std::string::npos ? "" : value.substr(first);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
            value.pop_back();
        }
        out.headers.emplace_back(std::move(name), std::move(value));
    }
    out.body.assign(text.substr(std::min(pos, text.size())));
    return true;
}

connector_check_report run_connector_check(const connector_check_options& options) {
    connector_check_report report;
    check_kit::run_phase(options, &check_kit::phase_describe, report);
    const bool loaded = has(report, "abi.descriptor", check_result::pass);
    const std::array<std::string_view, 5> later = {"validate.", "lifecycle.", "http.", "submit.",
                                                   "contain."};
    if (!loaded) {
        for (auto p : later) {
            report.checks.push_back({check_result::skip, std::string(p) + "*",
                                     "the module did not pass the ABI gates"});
        }
        return report;
    }
    check_kit::run_phase(options, &check_kit::phase_validate, report);
    if (!has(report, "validate.accepts-config", check_result::pass)) {
        const bool needs_settings = has(report, "validate.accepts-config", check_result::skip);
        for (std::size_t i = 1; i < later.size(); ++i) {
            report.checks.push_back(
                {check_result::skip, std::string(later[i]) + "*",
                 needs_settings ? "the module needs settings: pass --config"
                                : "validate() refused the config, so the host would not create "
                                  "an instance"});
        }
        return report;
    }
    check_kit::run_phase(options, &check_kit::phase_lifecycle, report);
    if (failed(report, "lifecycle.create")) {
        for (std::size_t i = 2; i < later.size(); ++i) {
            report.checks.push_back({check_result::skip, std::string(later[i]) + "*",
                                     "create() failed"});
        }
        return report;
    }
    check_kit::run_phase(options, &check_kit::phase_http, report);
    check_kit::run_phase(options, &check_kit::phase_contain, report);
    return report;
}

} // namespace wopbridge
