#include "plugins/check_phases.hpp"

#include "contract/json_schema.hpp"
#include "plugins/check_host.hpp"
#include "plugins/module_loader.hpp"

#include "wopbridge/connector.h"

#include <boost/json.hpp>

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace wopbridge::check_kit {
namespace {

namespace fs = std::filesystem;

// The connector-check gate a module_loader refusal belongs to.
std::string_view gate_name(module_gate gate) {
    switch (gate) {
    case module_gate::entry_symbol: return "abi.entry-symbol";
    case module_gate::abi_version: return "abi.version";
    case module_gate::descriptor: return "abi.descriptor";
    case module_gate::load:
    case module_gate::settings:
    case module_gate::other: break;
    }
    return "abi.load";
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

void check_exports(const std::string& path, reporter& out) {
    constexpr std::string_view name = "abi.exports";
    if (std::system("command -v nm >/dev/null 2>&1") != 0) {
        out.skip(name, "nm not found (install binutils to check exported symbols)");
        return;
    }
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        out.skip(name, "no module file to inspect");
        return;
    }
    const std::string cmd = "nm -D --defined-only " + shell_quote(path) + " 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
        out.skip(name, "could not run nm");
        return;
    }
    std::vector<std::string> symbols;
    std::array<char, 1024> line{};
    while (std::fgets(line.data(), static_cast<int>(line.size()), p) != nullptr) {
        std::string l = line.data();
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) {
            l.pop_back();
        }
        // "<address> <type> <name>"; version nodes (type A) are not symbols.
        const auto last = l.rfind(' ');
        if (last == std::string::npos || last < 2) {
            continue;
        }
        const char type = l[last - 1];
        if (type == 'A') {
            continue;
        }
        std::string sym = l.substr(last + 1);
        if (auto at = sym.find('@'); at != std::string::npos) {
            sym.resize(at);
        }
        symbols.push_back(sym);
    }
    const int rc = ::pclose(p);
    if (rc != 0 && symbols.empty()) {
        out.skip(name, "nm could not read the module");
        return;
    }
    std::vector<std::string> extra;
    bool entry = false;
    for (const auto& s : symbols) {
        if (s == WOPBRIDGE_ENTRY_SYMBOL) {
            entry = true;
        } else {
            extra.push_back(s);
        }
    }
    if (!extra.empty()) {
        std::string list;
        for (std::size_t i = 0; i < extra.size() && i < 5; ++i) {
            list += (i == 0 ? "" : ", ") + extra[i];
        }
        if (extra.size() > 5) {
            list += ", ...";
        }
        out.fail(name, std::to_string(extra.size()) + " symbol(s) exported besides " +
                           WOPBRIDGE_ENTRY_SYMBOL + ": " + list +
                           " (link wopbridge::sdk for the version script)");
        return;
    }
    if (!entry) {
        out.fail(name, std::string("the dynamic symbol table has no ") + WOPBRIDGE_ENTRY_SYMBOL);
        return;
    }
    out.pass(name, std::string("only ") + WOPBRIDGE_ENTRY_SYMBOL + " is exported");
}

// `given`: false when the operator passed no settings (the empty default): an instance the schema
// refuses then means the module needs settings, a SKIP.
void check_schema(const char* what, const std::string& schema_text, const std::string& instance,
                  const char* instance_name, std::string_view schema_check,
                  std::string_view instance_check, reporter& out, bool& schema_ok, bool given,
                  const char* flag) {
    boost::system::error_code ec;
    auto doc = boost::json::parse(schema_text, ec);
    if (ec || !doc.is_object()) {
        schema_ok = false;
        out.fail(schema_check, std::string(what) + " is not a JSON object");
        out.skip(instance_check, std::string("no usable ") + what);
        return;
    }
    schema_registry reg;
    const std::string ref = std::string(what) + ".json";
    if (auto r = reg.add(std::move(doc), ref); !r) {
        schema_ok = false;
        out.fail(schema_check, std::string(what) + " is not a usable JSON Schema: " +
                                   r.error().message());
        out.skip(instance_check, std::string("no usable ") + what);
        return;
    }
    auto value = boost::json::parse(instance, ec);
    if (ec) {
        out.fail(instance_check, std::string("the ") + instance_name + " is not JSON");
        return;
    }
    const auto errors = reg.validate(value, ref);
    std::vector<validation_error> schema_errors;
    std::vector<validation_error> instance_errors;
    for (const auto& e : errors) {
        if (e.kind == schema_error_kind::bad_schema) {
            schema_errors.push_back(e);
        } else if (e.kind == schema_error_kind::invalid || e.kind == schema_error_kind::limit) {
            instance_errors.push_back(e);
        }
    }
    if (!schema_errors.empty()) {
        schema_ok = false;
        out.fail(schema_check, std::string(what) + " is not a valid JSON Schema: " +
                                   format_errors(schema_errors));
    }
    if (!instance_errors.empty() && !given) {
        out.skip(instance_check, std::string("the module needs ") + instance_name + " (" +
                                     format_errors(instance_errors) + "); pass " + flag);
    } else if (!instance_errors.empty()) {
        out.fail(instance_check, std::string("the ") + instance_name +
                                     " does not validate against " +
                                     what + ": " + format_errors(instance_errors));
    } else {
        out.pass(instance_check,
                 std::string("the ") + instance_name + " validates against " + what);
    }
}

} // namespace

void phase_describe(phase_context& c) {
    reporter& out = c.out;
    out.begin("abi.load");
    auto m = load_module(c.opt.module);
    if (!m) {
        const std::string_view gate = gate_name(m.error().gate);
        const std::array<std::string_view, 4> gates = {"abi.load", "abi.entry-symbol",
                                                       "abi.version", "abi.descriptor"};
        bool after = false;
        for (auto g : gates) {
            if (g == gate) {
                out.fail(g, m.error().message);
                after = true;
            } else if (after) {
                out.skip(g, "an earlier gate failed");
            } else {
                out.pass(g, g == "abi.load" ? "the file loads" : "ok");
            }
        }
        check_exports(c.opt.module.find('/') != std::string::npos ? c.opt.module : "", out);
        return;
    }
    out.pass("abi.load", "loaded " + m->path);
    out.pass("abi.entry-symbol", std::string(WOPBRIDGE_ENTRY_SYMBOL) + " found");
    out.pass("abi.version", "module ABI " + std::to_string(m->abi_major) + "." +
                                std::to_string(m->abi_minor) + ", host " +
                                std::to_string(WOPBRIDGE_ABI_MAJOR) + "." +
                                std::to_string(WOPBRIDGE_ABI_MINOR));
    out.pass("abi.descriptor", m->name + " " + m->version + " (" + m->status + "), source " +
                                   m->source);
    check_exports(m->path, out);

    bool schemas_ok = true;
    out.begin("describe.config-schema");
    check_schema("config_schema_json", m->config_schema_json, c.opt.config_json, "config",
                 "describe.schemas", "describe.config-schema", out, schemas_ok,
                 c.opt.config_given, "--config");
    check_schema("subscription_schema_json", m->subscription_schema_json,
                 c.opt.subscription_settings_json, "subscription settings", "describe.schemas",
                 "describe.subscription-schema", out, schemas_ok, c.opt.subscription_settings_given,
                 "--subscription-settings");
    if (schemas_ok) {
        out.pass("describe.schemas", "config and subscription schemas load as JSON Schemas");
    }

    out.begin("describe.idempotent");
    auto entry = reinterpret_cast<wb_entry_fn>(::dlsym(m->handle.get(), WOPBRIDGE_ENTRY_SYMBOL));
    const wb_connector_descriptor* again = entry != nullptr ? entry() : nullptr;
    const wb_connector_descriptor* first = m->descriptor;
    auto same_text = [](const char* a, const char* b) {
        return a == b || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
    };
    if (again == first) {
        out.pass("describe.idempotent", "calling the entry twice returns the same descriptor");
    } else if (again != nullptr && again->struct_size == first->struct_size &&
               same_text(again->name, first->name) &&
               same_text(again->version, first->version) &&
               same_text(again->config_schema_json, first->config_schema_json) &&
               same_text(again->subscription_schema_json, first->subscription_schema_json) &&
               again->capabilities == first->capabilities && again->create == first->create) {
        out.pass("describe.idempotent",
                 "the entry returns an equal descriptor (at another address; keep it static)");
    } else {
        out.fail("describe.idempotent",
                 "a second call to the entry returned a different descriptor");
    }
}

void phase_validate(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    out.begin("validate.accepts-config");
    if (auto r = m->validate(c.opt.config_json); r) {
        out.pass("validate.accepts-config", "validate() accepts the given config");
    } else if (!c.opt.config_given) {
        // A correct module may need settings (a signing secret): not its fault, say what to do.
        out.skip("validate.accepts-config",
                 "the module needs settings (" + r.error().message +
                     "); pass --config with a working configuration to run the lifecycle, "
                     "http and submit checks");
    } else {
        out.fail("validate.accepts-config", r.error().message);
    }
    out.begin("validate.refuses-invalid");
    std::string problems;
    std::string reasons;
    for (std::string_view bad : {std::string_view("\"not an object\""), std::string_view("[]")}) {
        std::array<char, 512> buf{};
        const wb_status st = m->descriptor->validate(str(bad), buf.data(), buf.size());
        const std::string why = buf_text(buf);
        if (st == WB_OK) {
            problems += std::string(problems.empty() ? "" : "; ") + "accepted " + std::string(bad);
        } else if (why.empty()) {
            problems += std::string(problems.empty() ? "" : "; ") + "refused " + std::string(bad) +
                        " (" + status_name(st) + ") without a reason";
        } else if (reasons.empty()) {
            reasons = why;
        }
    }
    if (problems.empty()) {
        out.pass("validate.refuses-invalid", "refuses \"not an object\" and [] (" + reasons + ")");
    } else {
        out.fail("validate.refuses-invalid", problems);
    }
}

} // namespace wopbridge::check_kit
