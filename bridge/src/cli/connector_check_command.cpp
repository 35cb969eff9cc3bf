// `wopbridge connector-check`: the conformance kit a connector vendor runs on their module.
#include "cli/commands.hpp"

#include "plugins/connector_check.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace wopbridge::cli {
namespace {

constexpr const char* connector_check_usage =
    "usage: wopbridge connector-check MODULE.so [--config JSON|@FILE]\n"
    "           [--subscription-settings JSON|@FILE] [--probe-request FILE] [--json]\n"
    "Runs the connector conformance kit on a module: ABI gates, exported symbols, schemas,\n"
    "validate, lifecycle, HTTP probing, submit ordering/dedup/refusals, exception containment.\n"
    "Prints one PASS/FAIL/SKIP line per check. Exit 0 when nothing failed, 1 on failures,\n"
    "2 on usage errors. --probe-request FILE: a raw signed request to replay\n"
    "('METHOD TARGET', header lines, a blank line, the body).\n";

bool read_file(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
}

// "JSON" or "@file"; must parse as JSON. Empty = `fallback`.
bool json_arg(const arg_parser& p, const char* name, const std::string& fallback,
              std::string& out) {
    std::string v = p.value(name);
    if (v.empty()) {
        out = fallback;
        return true;
    }
    if (v.front() == '@') {
        if (!read_file(v.substr(1), out)) {
            std::fprintf(stderr, "wopbridge connector-check: --%s: cannot read %s\n", name,
                         v.substr(1).c_str());
            return false;
        }
    } else {
        out = v;
    }
    boost::system::error_code ec;
    boost::json::parse(out, ec);
    if (ec) {
        std::fprintf(stderr, "wopbridge connector-check: --%s is not valid JSON (%s)\n", name,
                     ec.message().c_str());
        return false;
    }
    return true;
}

} // namespace

int run_connector_check(const std::vector<std::string>& args) {
    arg_parser p(args);
    if (p.flag("help")) {
        std::fputs(connector_check_usage, stdout);
        return 0;
    }
    if (!p.error.empty() || p.positional().size() != 1) {
        if (!p.error.empty()) {
            std::fprintf(stderr, "wopbridge connector-check: %s\n", p.error.c_str());
        }
        std::fputs(connector_check_usage, stderr);
        return 2;
    }
    connector_check_options opt;
    opt.module = p.positional().front();
    if (!json_arg(p, "config", "{}", opt.config_json) ||
        !json_arg(p, "subscription-settings", "{}", opt.subscription_settings_json)) {
        return 2;
    }
    opt.config_given = !p.value("config").empty();
    opt.subscription_settings_given = !p.value("subscription-settings").empty();
    if (const std::string file = p.value("probe-request"); !file.empty()) {
        std::string text;
        if (!read_file(file, text)) {
            std::fprintf(stderr, "wopbridge connector-check: cannot read %s\n", file.c_str());
            return 2;
        }
        std::string error;
        if (!parse_probe_request(text, opt.probe, error)) {
            std::fprintf(stderr, "wopbridge connector-check: %s: %s\n", file.c_str(),
                         error.c_str());
            return 2;
        }
        opt.has_probe_request = true;
    }
    const auto report = run_connector_check(opt);
    const std::string text =
        p.flag("json") ? format_check_json(report, opt.module) : format_check_text(report);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return report.exit_code();
}

} // namespace wopbridge::cli
