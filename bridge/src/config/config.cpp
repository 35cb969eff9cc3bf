#include "config/config.hpp"

#include "config/config_reader.hpp"
#include "store/store_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

namespace wopbridge {

namespace fs = std::filesystem;

std::string config_error::to_string() const {
    if (line <= 0) {
        return file + ": " + message;
    }
    return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

env_lookup process_environment() {
    return [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
}

using namespace config_detail;

namespace {

// Where the first tab stands in a line's indentation (0-based line and column), if any: YAML
// indents with spaces only, and yaml-cpp reports a tab as something else ("illegal map value").
std::optional<YAML::Mark> tab_in_indentation(std::string_view text) {
    YAML::Mark m;
    std::size_t line_start = 0;
    while (line_start < text.size()) {
        auto end = text.find('\n', line_start);
        end = end == std::string_view::npos ? text.size() : end;
        for (auto i = line_start; i < end && (text[i] == ' ' || text[i] == '\t'); ++i) {
            if (text[i] == '\t') {
                m.column = static_cast<int>(i - line_start);
                return m;
            }
        }
        ++m.line;
        line_start = end + 1;
    }
    return std::nullopt;
}

} // namespace

bool parse_listen(const std::string& text, std::string& host, std::uint16_t& port) {
    return parse_listen_address(text, host, port);
}

config_load_result parse_config(std::string_view text, const std::string& file_name,
                                const fs::path& base_dir, const env_lookup& env) {
    config_load_result out;
    reader r(file_name, fs::absolute(base_dir).lexically_normal(), env);
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
        if (auto tab = tab_in_indentation(text)) {
            r.error(*tab, "YAML syntax error: a tab in the indentation (YAML indents with spaces "
                          "only); fix: replace it with spaces");
        } else {
            r.error(e.mark, "YAML syntax error: " + e.msg);
        }
        out.errors = std::move(r.errors);
        return out;
    } catch (const YAML::Exception& e) {
        r.error(e.mark, "YAML error: " + e.msg);
        out.errors = std::move(r.errors);
        return out;
    }
    config c;
    c.file = file_name;
    c.base_dir = fs::absolute(base_dir).lexically_normal();
    c.host_key_file = r.resolve("var/host.key");
    c.store.backend = store_backends().front().read(r, YAML::Node(YAML::NodeType::Undefined));
    if (!root.IsMap()) {
        if (root.IsNull() || !root.IsDefined()) {
            r.error(YAML::Mark(), "the file is empty (expected a mapping of settings)");
        } else {
            r.error(root.Mark(), "expected a mapping at the top level");
        }
        out.errors = std::move(r.errors);
        return out;
    }
    try {
        r.check_keys(root, "", {"server", "auth", "store", "runs", "delivery", "deadLetter",
                                "attachments", "connectors", "subscriptions", "hostKeyFile",
                                "logging", "testSeams", "webhooks"});
        if (reader::present(root["server"])) {
            read_server(r, root["server"], c);
        }
        if (reader::present(root["auth"])) {
            read_auth(r, root["auth"], c);
        }
        if (reader::present(root["store"])) {
            read_store(r, root["store"], c);
        }
        if (reader::present(root["runs"])) {
            read_runs(r, root["runs"], c);
        }
        if (reader::present(root["delivery"])) {
            read_delivery(r, root["delivery"], c);
        }
        if (reader::present(root["deadLetter"])) {
            read_dead_letter(r, root["deadLetter"], c);
        }
        read_attachments(r, root["attachments"], c); // after delivery and deadLetter
        if (reader::present(root["connectors"])) {
            read_connectors(r, root["connectors"], c);
        }
        if (reader::present(root["subscriptions"])) {
            read_subscriptions(r, root["subscriptions"], c);
        }
        std::string hk;
        if (r.str(root, "hostKeyFile", "", hk)) {
            c.host_key_file = r.resolve(hk);
            const auto mark = root["hostKeyFile"].Mark();
            c.host_key_file_line = mark.line + 1;
            c.host_key_file_column = mark.column + 1;
        }
        YAML::Node logging = root["logging"];
        if (reader::present(logging) && r.expect_map(logging, "logging")) {
            r.check_keys(logging, "logging", {"level"});
            static constexpr const char* levels[] = {"trace", "debug", "info", "warn", "error"};
            if (auto l = r.choice(logging, "level", "logging", {"trace", "debug", "info", "warn", "error"})) {
                c.logging.level = levels[*l];
            }
        }
        r.boolean(root, "testSeams", "", c.test_seams);
        YAML::Node webhooks = root["webhooks"];
        if (reader::present(webhooks) && r.expect_map(webhooks, "webhooks")) {
            r.check_keys(webhooks, "webhooks", {"durable", "allowLoopbackHttp"});
            r.boolean(webhooks, "durable", "webhooks", c.webhooks.durable);
            r.boolean(webhooks, "allowLoopbackHttp", "webhooks", c.webhooks.allow_loopback_http);
        }
    } catch (const YAML::Exception& e) {
        // Defensive: yaml-cpp throws on odd node shapes (e.g. a sequence indexed by key).
        r.error(e.mark, "YAML error: " + e.msg);
    }
    if (c.server.public_url.empty()) {
        c.server.public_url = (c.server.tls ? "https://" : "http://") + c.server.listen;
    }
    out.errors = std::move(r.errors);
    if (out.errors.empty()) {
        out.value = std::move(c);
    }
    return out;
}

config_load_result load_config(const std::string& path, const env_lookup& env) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        config_load_result out;
        out.errors.push_back({path, 0, 0, "cannot open the file"});
        return out;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    fs::path dir = fs::absolute(fs::path(path)).parent_path();
    return parse_config(ss.str(), path, dir, env);
}

std::map<std::string, rate_limit> subscription_rate_limits(const config& c) {
    std::map<std::string, rate_limit> out;
    for (const auto& s : c.subscriptions) {
        if (s.rate_limit_override) {
            out[s.id] = *s.rate_limit_override;
        }
    }
    return out;
}

bridge_settings make_bridge_settings(const config& c) {
    bridge_settings s;
    s.public_url = c.server.public_url;
    s.default_retry = c.delivery.retry;
    s.default_breaker = c.delivery.breaker;
    s.dedup_retention_ms = std::max<millis>(c.delivery.dedup_retention_ms, 24LL * 3600 * 1000);
    s.node_timeout_ms = c.store.backend->node_timeout();
    s.dead_letter_retention_days = c.dead_letter.retention_days;
    s.dead_letter_max_page_size = c.dead_letter.max_page_size;
    s.refused_records_per_subscription = c.dead_letter.refused_records_per_subscription;
    s.refused_records_total = c.dead_letter.refused_records_total;
    s.max_in_flight_deliveries = c.delivery.max_in_flight;
    s.delivery_batch_size = c.delivery.batch_size;
    s.max_pending_intake = c.delivery.max_pending_intake;
    s.delivery_lease_ms = c.delivery.lease_ms;
    s.attempt_timeout_ms = c.delivery.attempt_timeout_ms;
    s.test_seams = c.test_seams;
    if (c.runs.mode == runs_config::mode_kind::local) {
        for (const auto& w : c.runs.workflows) {
            s.local_workflows.push_back(w.id);
        }
    }
    s.host_key_file = c.host_key_file;
    s.webhooks_durable = c.webhooks.durable;
    s.webhooks_allow_loopback_http = c.webhooks.allow_loopback_http;
    return s;
}

std::vector<subscription> make_subscriptions(const config& c, std::map<std::string, std::string>& secrets) {
    std::vector<subscription> out;
    for (const auto& sc : c.subscriptions) {
        subscription s;
        s.id = sc.id;
        s.tenant = sc.tenant;
        s.source = sc.source;
        s.state = sub_state::active;
        s.workflow_id = sc.workflow_id;
        s.dedup_enabled = sc.dedup;
        s.retry = sc.retry.value_or(c.delivery.retry);
        s.breaker = c.delivery.breaker;
        s.verification = sc.verification;
        s.provider = sc.provider;
        s.schedule = sc.schedule;
        s.connector = sc.connector;
        s.connector_settings_json = sc.settings_json;
        s.hold_when_not_active = sc.hold_when_not_active;
        s.max_concurrency = sc.max_concurrency;
        s.origin = subscription::origin_kind::config;
        if (!sc.signing_secret.empty()) {
            secrets[sc.id] = sc.signing_secret;
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::string run_working_directory(const config& c) {
    return c.base_dir.string();
}

std::string run_output_directory(const config& c) {
    if (c.runs.mode != runs_config::mode_kind::local) {
        return {};
    }
    return (c.store.backend->node_files_directory(c) / "run-output").string();
}

std::unique_ptr<run_starter> make_run_starter(const config& c) {
    if (c.runs.mode == runs_config::mode_kind::upstream) {
        return make_upstream_run_starter(c.runs.upstream);
    }
    local_run_options o;
    o.output_dir = run_output_directory(c);
    // Owner only, like the store beside it: output may carry what the workflow printed of its input.
    std::error_code ec;
    if (fs::create_directories(o.output_dir, ec)) {
        fs::permissions(o.output_dir, fs::perms::owner_all, ec);
    }
    return make_local_run_starter(c.runs.workflows, run_working_directory(c), o);
}

} // namespace wopbridge
