// Small subcommands and the shared argument parser.
#include "cli/commands.hpp"
#include "app/preflight.hpp"

#include "config/config.hpp"
#include "plugins/module_loader.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace wopbridge::cli {

arg_parser::arg_parser(const std::vector<std::string>& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.rfind("--", 0) != 0 || a == "--") {
            positional_.push_back(a);
            continue;
        }
        std::string name = a.substr(2);
        auto eq = name.find('=');
        if (eq != std::string::npos) {
            options_.emplace_back(name.substr(0, eq), name.substr(eq + 1));
            continue;
        }
        // Flags without values: --help, --json; everything else takes the next argument.
        if (name == "help" || name == "json" || name == "all" || name == "init" ||
            name == "quick") {
            options_.emplace_back(name, "");
            continue;
        }
        if (i + 1 >= args.size()) {
            error = "--" + name + " needs a value";
            continue;
        }
        options_.emplace_back(name, args[++i]);
    }
}

bool arg_parser::flag(const std::string& name) const {
    return std::any_of(options_.begin(), options_.end(),
                       [&](const auto& o) { return o.first == name; });
}

std::string arg_parser::value(const std::string& name) const {
    std::string out;
    for (const auto& [k, v] : options_) {
        if (k == name) {
            out = v;
        }
    }
    return out;
}

std::vector<std::string> arg_parser::values(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : options_) {
        if (k == name) {
            out.push_back(v);
        }
    }
    return out;
}

int run_check_config(const std::vector<std::string>& args) {
    arg_parser p(args);
    if (p.flag("help") || p.positional().size() != 1) {
        std::fputs("usage: wopbridge check-config FILE [--module-path DIR]...\n"
                   "Validates FILE without starting; prints each problem as file:line:col: what.\n",
                   p.flag("help") ? stdout : stderr);
        return p.flag("help") ? 0 : 2;
    }
    const std::string& path = p.positional().front();
    std::optional<config> cfg;
    auto problems = preflight_for_check(path, cfg, process_environment(), p.values("module-path"));
    for (const auto& e : problems) {
        std::fprintf(stderr, "%s\n", e.to_string().c_str());
    }
    if (!problems.empty()) {
        std::fprintf(stderr, "%s: %zu %s\n", path.c_str(), problems.size(),
                     problems.size() == 1 ? "error" : "errors");
        return 2;
    }
    std::printf("%s: ok\n", path.c_str());
    return 0;
}

int run_connectors(const std::vector<std::string>& args) {
    arg_parser p(args);
    if (p.flag("help")) {
        std::puts("usage: wopbridge connectors [--module-path DIR]...\n"
                  "Lists the connector modules found on the module path (default:\n"
                  "../lib/wopbridge/connectors next to the executable) with name, version, status,\n"
                  "ABI and source.");
        return 0;
    }
    auto rows = list_modules(p.values("module-path"));
    if (rows.empty()) {
        std::puts("no connector modules found");
        return 0;
    }
    std::printf("%-12s %-9s %-7s %-5s %-8s %s\n", "NAME", "VERSION", "STATUS", "ABI", "SOURCE", "PATH");
    int broken = 0;
    for (const auto& r : rows) {
        if (!r.error.empty()) {
            ++broken;
            std::printf("%-12s %-9s %-7s %-5s %-8s %s\n    refused: %s\n", r.name.c_str(), "-", "-", "-",
                        "-", r.path.c_str(), r.error.c_str());
            continue;
        }
        std::printf("%-12s %-9s %-7s %-5s %-8s %s\n", r.name.c_str(), r.version.c_str(),
                    r.status.c_str(), r.abi.c_str(), r.source.c_str(), r.path.c_str());
    }
    return broken == 0 ? 0 : 1;
}

} // namespace wopbridge::cli
