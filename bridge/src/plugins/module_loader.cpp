#include "plugins/module_loader.hpp"

#include "wopbridge/connector.h"

#include <boost/json.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace wopbridge {
namespace {

namespace fs = std::filesystem;

module_error refuse(const std::string& path, std::string_view why, module_gate gate,
                    errc code = errc::invalid_argument) {
    return module_error{code, path + ": " + std::string(why), gate};
}

bool is_path(const std::string& value) {
    return value.find('/') != std::string::npos ||
           (value.size() > 3 && value.compare(value.size() - 3, 3, ".so") == 0);
}

bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

// A descriptor string field: present, NUL-terminated within a sane bound.
bool text_field(const char* s, std::size_t max = 1 << 20) {
    if (s == nullptr) {
        return false;
    }
    return ::strnlen(s, max) < max;
}

std::string dl_error() {
    const char* e = ::dlerror();
    std::string msg = e != nullptr ? e : "unknown error";
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return msg;
}

std::string descriptor_header_problem(const wb_connector_descriptor* d) {
    if (d == nullptr) {
        return "invalid descriptor: entry returned null";
    }
    constexpr std::size_t version_end = offsetof(wb_connector_descriptor, name);
    if (d->struct_size < version_end) {
        return "invalid descriptor: struct_size " + std::to_string(d->struct_size) +
               " is too short";
    }
    return {};
}

// The version gate: read only once the header (struct_size) is known to cover the version fields.
std::string abi_problem(const wb_connector_descriptor* d) {
    if (d->abi_major != WOPBRIDGE_ABI_MAJOR) {
        return "ABI major " + std::to_string(d->abi_major) + ", host supports " +
               std::to_string(WOPBRIDGE_ABI_MAJOR);
    }
    if (d->abi_minor > WOPBRIDGE_ABI_MINOR) {
        return "ABI minor " + std::to_string(d->abi_minor) + " is newer than host's " +
               std::to_string(WOPBRIDGE_ABI_MINOR);
    }
    return {};
}

std::string descriptor_body_problem(const wb_connector_descriptor* d) {
    if (d->struct_size < sizeof(wb_connector_descriptor)) {
        return "invalid descriptor: struct_size " + std::to_string(d->struct_size) +
               " is shorter than ABI " + std::to_string(WOPBRIDGE_ABI_MAJOR) + "." +
               std::to_string(WOPBRIDGE_ABI_MINOR) + "'s " +
               std::to_string(sizeof(wb_connector_descriptor));
    }
    if (!text_field(d->name, 128) || !valid_name(d->name)) {
        return "invalid descriptor: missing or invalid name (want [a-z0-9_-]{1,64})";
    }
    if (!text_field(d->version, 128) || *d->version == '\0') {
        return "invalid descriptor: missing version";
    }
    if (!text_field(d->status, 16)) {
        return "invalid descriptor: missing status";
    }
    const std::string_view status = d->status;
    if (status != "stable" && status != "alpha" && status != "wip") {
        return "invalid descriptor: bad status value '" + std::string(status) +
               "' (want stable, alpha or wip)";
    }
    if (!text_field(d->security_posture, 4096) || *d->security_posture == '\0') {
        return "invalid descriptor: missing security_posture";
    }
    if (!text_field(d->source, 64) || *d->source == '\0') {
        return "invalid descriptor: missing source";
    }
    if (d->sdk_build_id != nullptr && !text_field(d->sdk_build_id, 128)) {
        return "invalid descriptor: unterminated sdk_build_id";
    }
    struct fn_check {
        bool present;
        const char* what;
    };
    const std::array<fn_check, 7> fns = {{{d->validate != nullptr, "validate"},
                                          {d->create != nullptr, "create"},
                                          {d->start != nullptr, "start"},
                                          {d->subscribe != nullptr, "subscribe"},
                                          {d->unsubscribe != nullptr, "unsubscribe"},
                                          {d->stop != nullptr, "stop"},
                                          {d->destroy != nullptr, "destroy"}}};
    for (const auto& f : fns) {
        if (!f.present) {
            return std::string("invalid descriptor: missing function ") + f.what;
        }
    }
    if ((d->capabilities & WB_CAP_HTTP_INGEST) != 0 && d->on_http_request == nullptr) {
        return "invalid descriptor: missing function on_http_request (capability http-ingest)";
    }
    const std::array<std::pair<const char*, const char*>, 2> schemas = {
        {{d->config_schema_json, "config_schema_json"},
         {d->subscription_schema_json, "subscription_schema_json"}}};
    for (const auto& [text, what] : schemas) {
        if (!text_field(text)) {
            return std::string("invalid descriptor: missing ") + what;
        }
        boost::system::error_code ec;
        const auto doc = boost::json::parse(text, ec);
        if (ec) {
            return std::string("invalid descriptor: ") + what + " is not valid JSON (" +
                   ec.message() + ")";
        }
        if (!doc.is_object()) {
            return std::string("invalid descriptor: ") + what + " is not a JSON object";
        }
    }
    return {};
}

} // namespace

std::string descriptor_problem(const wb_connector_descriptor* d) {
    for (auto* check : {&descriptor_header_problem, &abi_problem, &descriptor_body_problem}) {
        if (auto why = check(d); !why.empty()) {
            return why;
        }
    }
    return {};
}

namespace {

module_result<loaded_module> open_path(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        return refuse(path, "not found", module_gate::load, errc::not_found);
    }
    ::dlerror();
    void* raw = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (raw == nullptr) {
        return refuse(path, "cannot load: " + dl_error(), module_gate::load);
    }
    std::shared_ptr<void> handle(raw, [](void* h) { ::dlclose(h); });
    ::dlerror();
    void* sym = ::dlsym(raw, WOPBRIDGE_ENTRY_SYMBOL);
    if (sym == nullptr) {
        return refuse(path, "missing entry symbol " WOPBRIDGE_ENTRY_SYMBOL, module_gate::entry_symbol);
    }
    auto entry = reinterpret_cast<wb_entry_fn>(sym);
    const wb_connector_descriptor* d = nullptr;
    try {
        d = entry();
    } catch (...) {
        return refuse(path, "invalid descriptor: entry function threw", module_gate::descriptor);
    }
    if (auto why = descriptor_header_problem(d); !why.empty()) {
        return refuse(path, why, module_gate::descriptor);
    }
    if (auto why = abi_problem(d); !why.empty()) {
        return refuse(path, why, module_gate::abi_version);
    }
    if (auto why = descriptor_body_problem(d); !why.empty()) {
        return refuse(path, why, module_gate::descriptor);
    }
    loaded_module m;
    m.path = path;
    m.name = d->name;
    m.version = d->version;
    m.status = d->status;
    m.security_posture = d->security_posture;
    m.sdk_build_id = d->sdk_build_id != nullptr ? d->sdk_build_id : "";
    m.source = d->source;
    m.config_schema_json = d->config_schema_json;
    m.subscription_schema_json = d->subscription_schema_json;
    m.capabilities = d->capabilities;
    m.abi_major = d->abi_major;
    m.abi_minor = d->abi_minor;
    m.descriptor = d;
    m.handle = std::move(handle);
    return m;
}

} // namespace

module_result<void> loaded_module::validate(std::string_view config_json) const {
    if (descriptor == nullptr) {
        return refuse(path, "not loaded", module_gate::other, errc::internal);
    }
    std::array<char, 512> buf{};
    wb_status st = WB_ERR_INTERNAL;
    try {
        st = descriptor->validate(wb_str{config_json.data(), config_json.size()}, buf.data(),
                                  buf.size());
    } catch (...) {
        return refuse(path, "config rejected: validate threw", module_gate::settings);
    }
    if (st == WB_OK) {
        return {};
    }
    buf.back() = '\0';
    std::string reason = buf.data();
    if (reason.empty()) {
        reason = st == WB_ERR_INVALID ? "invalid settings"
                                      : "validate failed (status " + std::to_string(st) + ")";
    }
    return refuse(path, "config rejected: " + reason, module_gate::settings);
}

std::vector<std::string> default_module_dirs() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
        return {};
    }
    return {(exe.parent_path() / ".." / "lib" / "wopbridge" / "connectors").lexically_normal().string()};
}

module_result<loaded_module> load_module(const std::string& path_or_name,
                                         const std::vector<std::string>& module_dirs) {
    if (path_or_name.empty()) {
        return module_error{errc::invalid_argument, "connector module: empty name"};
    }
    if (is_path(path_or_name)) {
        return open_path(path_or_name);
    }
    if (!valid_name(path_or_name)) {
        return module_error{errc::invalid_argument,
                            "connector module '" + path_or_name + "': invalid name"};
    }
    const auto dirs = module_dirs.empty() ? default_module_dirs() : module_dirs;
    std::string searched;
    for (const auto& dir : dirs) {
        const std::string candidate = (fs::path(dir) / (path_or_name + ".so")).string();
        std::error_code ec;
        if (fs::exists(candidate, ec)) {
            return open_path(candidate);
        }
        searched += searched.empty() ? candidate : ", " + candidate;
    }
    std::string hint;
    // The modules that link a broker's client library come in packages of their own.
    for (const char* separate : {"kafka", "nats", "queue", "rabbitmq"}) {
        if (path_or_name == separate) {
            hint = " (the Debian package wopbridge-connector-" + path_or_name + " installs it)";
        }
    }
    return module_error{errc::not_found, (searched.empty() ? path_or_name + ".so" : searched) +
                                             ": not found" + hint};
}

std::vector<module_listing> list_modules(const std::vector<std::string>& module_dirs) {
    const auto dirs = module_dirs.empty() ? default_module_dirs() : module_dirs;
    std::vector<std::string> files;
    for (const auto& dir : dirs) {
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            if (it->path().extension() == ".so") {
                files.push_back(it->path().string());
            }
        }
    }
    std::sort(files.begin(), files.end());
    std::vector<module_listing> rows;
    for (const auto& file : files) {
        module_listing row;
        row.path = file;
        auto m = load_module(file);
        if (m) {
            row.name = m->name;
            row.version = m->version;
            row.status = m->status;
            row.security_posture = m->security_posture;
            row.source = m->source;
            row.abi = std::to_string(m->abi_major) + "." + std::to_string(m->abi_minor);
        } else {
            row.name = fs::path(file).stem().string();
            row.error = m.error().message;
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::string format_listing(const std::vector<module_listing>& rows) {
    if (rows.empty()) {
        return "no connector modules found\n";
    }
    std::string out;
    for (const auto& r : rows) {
        if (!r.error.empty()) {
            out += r.name + " BROKEN " + r.error + "\n";
            continue;
        }
        out += r.name + " " + r.version + " " + r.status + " abi " + r.abi + " source " + r.source +
               " " + r.path + "\n";
        out += "    security: " + r.security_posture + "\n";
    }
    return out;
}

} // namespace wopbridge
