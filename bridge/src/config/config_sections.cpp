// The config file's sections other than connectors and subscriptions (config_subscriptions.cpp).
#include "config/config_reader.hpp"
#include "store/store_backend.hpp"

#include "contract/retry_schedule.hpp"

#include "core/scopes.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace wopbridge::config_detail {

void read_retry(reader& r, const YAML::Node& n, const std::string& path, retry_policy& out) {
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path, {"maxAttempts", "backoff", "baseDelay", "maxDelay", "jitter"});
    r.integer_into(n, "maxAttempts", path, out.max_attempts, retry_max_attempts_min,
                   retry_max_attempts_max);
    if (auto b = r.choice(n, "backoff", path, {"none", "fixed", "exponential"})) {
        out.backoff = *b == 0 ? backoff_kind::none : *b == 1 ? backoff_kind::fixed : backoff_kind::exponential;
    }
    r.duration(n, "baseDelay", path, out.base_delay_ms);
    r.duration(n, "maxDelay", path, out.max_delay_ms);
    r.boolean(n, "jitter", path, out.jitter);
}

// {rate, burst}: rate in requests per second (may be fractional), burst a whole number >= 1.
void read_rate_limit(reader& r, const YAML::Node& n, const std::string& path, rate_limit& out) {
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path, {"rate", "burst"});
    YAML::Node rate = n["rate"];
    if (!reader::present(rate)) {
        r.error(n.Mark(), path + ".rate: required");
        return;
    }
    double v = -1;
    std::size_t used = 0;
    const std::string text = rate.IsScalar() ? rate.Scalar() : std::string();
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || !(v > 0) || v > 1e9) {
        r.error(rate.Mark(), path +
                                 ".rate: expected a number of requests per second above 0, got '" +
                                 text + "'");
        return;
    }
    out.rate = v;
    out.burst = std::max(1.0, std::ceil(v));
    long long burst = 0;
    if (r.integer(n, "burst", path, burst, 1, 1000000000)) {
        out.burst = static_cast<double>(burst);
    }
}

void read_rate_limit_or_off(reader& r, const YAML::Node& n, const std::string& path,
                            rate_limit& out) {
    if (reader::present(n) && n.IsScalar() && n.Scalar() == "off") {
        out = rate_limit{};
    } else if (reader::present(n)) {
        read_rate_limit(r, n, path, out);
    }
}

// server.trustedProxies: a list of addresses or CIDR blocks (a scalar is one).
void read_trusted_proxies(reader& r, const YAML::Node& n, std::vector<address_block>& out) {
    if (!reader::present(n)) {
        return;
    }
    const std::string path = "server.trustedProxies";
    std::vector<YAML::Node> items;
    if (n.IsScalar()) {
        items.push_back(n);
    } else if (n.IsSequence()) {
        for (const auto& item : n) {
            items.push_back(item);
        }
    } else {
        r.error(n.Mark(), path + ": a list of addresses or CIDR blocks (e.g. [127.0.0.1, 10.0.0.0/8])");
        return;
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto item_path = path + "[" + std::to_string(i) + "]";
        if (!items[i].IsScalar()) {
            r.error(items[i].Mark(), item_path + ": an address or CIDR block (e.g. 10.0.0.0/8)");
            continue;
        }
        const auto text = items[i].as<std::string>();
        auto block = parse_address_block(text);
        if (!block) {
            r.error(items[i].Mark(), item_path + ": '" + text +
                                         "' is not an address or CIDR block (e.g. 127.0.0.1, "
                                         "10.0.0.0/8, ::1, fd00::/8)");
            continue;
        }
        if (block->prefix_bits < 96 + 8 && block->bytes[10] == 0xff && block->bytes[11] == 0xff) {
            r.error(items[i].Mark(), item_path + ": '" + text +
                                         "' trusts most of the internet to name any client; list "
                                         "the proxies' own addresses or networks");
            continue;
        }
        if (block->prefix_bits < 8) {
            r.error(items[i].Mark(), item_path + ": '" + text +
                                         "' trusts most of the internet to name any client; list "
                                         "the proxies' own addresses or networks");
            continue;
        }
        out.push_back(std::move(*block));
    }
}

void read_server(reader& r, const YAML::Node& n, config& c) {
    const std::string path = "server";
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path,
                 {"listen", "publicUrl", "maxBodyBytes", "threads", "tls", "maxConnections",
                  "maxInFlightRequests", "reservedInFlightRequests", "maxConnectionsPerAddress",
                  "minBodyBytesPerSecond", "bodyGraceSeconds", "rateLimits", "trustedProxies"});
    auto& s = c.server;
    std::string listen;
    if (r.str(n, "listen", path, listen)) {
        if (parse_listen_address(listen, s.listen_host, s.listen_port)) {
            s.listen = listen;
        } else {
            r.error(n["listen"].Mark(), "server.listen: '" + listen +
                                            "' is not a valid address (expected host:port, e.g. "
                                            "127.0.0.1:8080 or [::1]:8080)");
        }
    }
    std::string url;
    if (r.str(n, "publicUrl", path, url)) {
        if (valid_http_url(url)) {
            while (!url.empty() && url.back() == '/') {
                url.pop_back();
            }
            s.public_url = url;
        } else {
            r.error(n["publicUrl"].Mark(), "server.publicUrl: '" + url + "' is not an http(s) URL");
        }
    }
    r.integer_into(n, "maxBodyBytes", path, s.max_body_bytes, 1, 1LL << 32);
    r.integer_into(n, "threads", path, s.threads, 1, 256);
    r.integer_into(n, "maxConnections", path, s.max_connections, 1, 1000000);
    r.integer_into(n, "maxInFlightRequests", path, s.max_in_flight_requests, 1, 1000000);
    r.integer_into(n, "reservedInFlightRequests", path, s.reserved_in_flight_requests, 0, 100000);
    r.integer_into(n, "maxConnectionsPerAddress", path, s.max_connections_per_address, 1, 1000000);
    r.integer_into(n, "minBodyBytesPerSecond", path, s.min_body_bytes_per_second, 0, 1LL << 32);
    r.integer_into(n, "bodyGraceSeconds", path, s.body_grace_seconds, 0, 3600);
    YAML::Node limits = n["rateLimits"];
    if (reader::present(limits) && r.expect_map(limits, "server.rateLimits")) {
        r.check_keys(limits, "server.rateLimits", {"perSubscription", "perSourceAddress"});
        if (reader::present(limits["perSubscription"])) {
            read_rate_limit(r, limits["perSubscription"], "server.rateLimits.perSubscription",
                            s.per_subscription);
        }
        // `off` behind a proxy, where every post has one address.
        read_rate_limit_or_off(r, limits["perSourceAddress"], "server.rateLimits.perSourceAddress",
                               s.per_source_address);
    }
    read_trusted_proxies(r, n["trustedProxies"], s.trusted_proxies);
    YAML::Node tls = n["tls"];
    if (reader::present(tls) && r.expect_map(tls, "server.tls")) {
        r.check_keys(tls, "server.tls", {"certFile", "keyFile"});
        tls_config t;
        bool ok = r.str(tls, "certFile", "server.tls", t.cert_file, false, true);
        ok = r.str(tls, "keyFile", "server.tls", t.key_file, false, true) && ok;
        if (ok) {
            t.cert_file = r.resolve(t.cert_file);
            t.key_file = r.resolve(t.key_file);
            s.tls = t;
        }
    }
}

void read_auth(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "auth")) {
        return;
    }
    r.check_keys(n, "auth", {"apiKeys"});
    YAML::Node keys = n["apiKeys"];
    if (!reader::present(keys) || !r.expect_seq(keys, "auth.apiKeys")) {
        return;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const std::string path = "auth.apiKeys[" + std::to_string(i) + "]";
        YAML::Node k = keys[i];
        if (!r.expect_map(k, path)) {
            continue;
        }
        r.check_keys(k, path, {"key", "tenant", "scopes"});
        api_key_config a;
        r.str(k, "key", path, a.key, true, true);
        r.str(k, "tenant", path, a.tenant);
        YAML::Node scopes = k["scopes"];
        if (reader::present(scopes) && r.expect_seq(scopes, path + ".scopes")) {
            for (std::size_t j = 0; j < scopes.size(); ++j) {
                const std::string sp = path + ".scopes[" + std::to_string(j) + "]";
                auto v = r.scalar(scopes[j], sp);
                if (!v) {
                    continue;
                }
                // Only the scopes a route checks: an unknown one (a typo) grants nothing, so a
                // key carrying it would load and then answer 403 where access was meant.
                if (!is_known_scope(*v)) {
                    std::string valid;
                    for (auto k : known_scopes) {
                        valid += (valid.empty() ? "" : ", ") + std::string(k);
                    }
                    // Quoted as written: a ${VAR} here is not expanded into the message.
                    r.error(scopes[j].Mark(), sp + ": '" + scopes[j].Scalar() +
                                                  "' is not a scope (expected one of " + valid +
                                                  ")");
                    continue;
                }
                a.scopes.push_back(*v);
            }
        }
        c.api_keys.push_back(std::move(a));
    }
}

// The section names a registered backend, which reads its own settings (store/store_backend.hpp).
void read_store(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "store")) {
        return;
    }
    std::vector<std::string_view> names;
    for (const auto& b : store_backends()) {
        names.push_back(b.name);
    }
    r.check_keys(n, "store", names);
    const store_backend* chosen = nullptr;
    for (const auto& b : store_backends()) {
        if (!reader::present(n[std::string(b.name)])) {
            continue;
        }
        if (chosen != nullptr) {
            r.error(n.Mark(), "store: set either " + std::string(chosen->name) + " or " +
                                  std::string(b.name) + ", not both");
            return;
        }
        chosen = &b;
    }
    if (chosen != nullptr) {
        c.store.backend = chosen->read(r, n[std::string(chosen->name)]);
    }
}

void read_runs(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "runs")) {
        return;
    }
    r.check_keys(n, "runs", {"local", "upstream"});
    YAML::Node local = n["local"];
    YAML::Node up = n["upstream"];
    if (reader::present(local) && reader::present(up)) {
        r.error(n.Mark(), "runs: set either local or upstream, not both");
        return;
    }
    if (reader::present(up)) {
        c.runs.mode = runs_config::mode_kind::upstream;
        if (!r.expect_map(up, "runs.upstream")) {
            return;
        }
        const std::string path = "runs.upstream";
        r.check_keys(up, path, {"baseUrl", "apiKey", "timeout"});
        std::string url;
        if (r.str(up, "baseUrl", path, url, false, true)) {
            if (valid_http_url(url)) {
                while (!url.empty() && url.back() == '/') {
                    url.pop_back();
                }
                c.runs.upstream.base_url = url;
            } else {
                r.error(up["baseUrl"].Mark(), path + ".baseUrl: '" + url + "' is not an http(s) URL");
            }
        }
        r.str(up, "apiKey", path, c.runs.upstream.api_key, true);
        r.duration(up, "timeout", path, c.runs.upstream.timeout_ms, 1);
        return;
    }
    if (!reader::present(local) || !r.expect_map(local, "runs.local")) {
        return;
    }
    r.check_keys(local, "runs.local", {"workflows"});
    YAML::Node wfs = local["workflows"];
    if (!reader::present(wfs) || !r.expect_seq(wfs, "runs.local.workflows")) {
        return;
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < wfs.size(); ++i) {
        const std::string path = "runs.local.workflows[" + std::to_string(i) + "]";
        YAML::Node w = wfs[i];
        if (!r.expect_map(w, path)) {
            continue;
        }
        r.check_keys(w, path, {"id", "command", "timeout", "env"});
        local_workflow wf;
        if (r.str(w, "id", path, wf.id, false, true) && !seen.insert(wf.id).second) {
            r.error(w["id"].Mark(), path + ".id: duplicate workflow id '" + wf.id + "'");
        }
        YAML::Node cmd = w["command"];
        if (reader::present(cmd)) {
            if (cmd.IsScalar()) {
                if (auto v = r.scalar(cmd, path + ".command")) {
                    wf.command.push_back(*v);
                }
            } else if (r.expect_seq(cmd, path + ".command")) {
                for (std::size_t j = 0; j < cmd.size(); ++j) {
                    if (auto v = r.scalar(cmd[j], path + ".command[" + std::to_string(j) + "]")) {
                        wf.command.push_back(*v);
                    }
                }
                if (cmd.size() == 0) {
                    r.error(cmd.Mark(), path + ".command: must not be empty (omit it instead)");
                }
            }
            if (!wf.command.empty() && wf.command[0].find('/') != std::string::npos) {
                wf.command[0] = r.resolve(wf.command[0]);
            }
        }
        r.duration(w, "timeout", path, wf.timeout_ms, 1);
        YAML::Node env = w["env"];
        if (reader::present(env) && r.expect_map(env, path + ".env")) {
            for (auto it = env.begin(); it != env.end(); ++it) {
                std::string name = it->first.Scalar();
                if (!valid_env_name(name)) {
                    r.error(it->first.Mark(), path + ".env: '" + name + "' is not a valid variable name");
                    continue;
                }
                if (auto v = r.secret(it->second, path + ".env." + name)) {
                    wf.env.emplace_back(name, *v);
                }
            }
        }
        c.runs.workflows.push_back(std::move(wf));
    }
}

void read_delivery(reader& r, const YAML::Node& n, config& c) {
    const std::string path = "delivery";
    if (!r.expect_map(n, path)) {
        return;
    }
    r.check_keys(n, path, {"retryPolicy", "dedupRetention", "concurrency", "maxInFlight",
                           "batchSize", "maxPendingIntake", "attemptTimeout", "lease", "breaker"});
    auto& d = c.delivery;
    if (reader::present(n["retryPolicy"])) {
        read_retry(r, n["retryPolicy"], "delivery.retryPolicy", d.retry);
    }
    r.duration(n, "dedupRetention", path, d.dedup_retention_ms, 24LL * 3600 * 1000);
    // `maxInFlight` is the earlier name of `concurrency`: still read, never both.
    if (reader::present(n["concurrency"]) && reader::present(n["maxInFlight"])) {
        r.error(n["maxInFlight"].Mark(),
                "delivery.maxInFlight: the earlier name of delivery.concurrency; set only "
                "concurrency");
    }
    r.integer_into(n, "maxInFlight", path, d.max_in_flight, 1, 100000);
    r.integer_into(n, "concurrency", path, d.max_in_flight, 1, 100000);
    r.integer_into(n, "batchSize", path, d.batch_size, 1, 10000);
    r.integer_into(n, "maxPendingIntake", path, d.max_pending_intake, 1, 100000000);
    r.duration(n, "attemptTimeout", path, d.attempt_timeout_ms, 1);
    r.duration(n, "lease", path, d.lease_ms, 1000);
    YAML::Node b = n["breaker"];
    if (reader::present(b) && r.expect_map(b, "delivery.breaker")) {
        r.check_keys(b, "delivery.breaker", {"failureThreshold", "probeInterval"});
        r.integer_into(b, "failureThreshold", "delivery.breaker", d.breaker.failure_threshold, 1, 1000000);
        r.duration(b, "probeInterval", "delivery.breaker", d.breaker.probe_interval_ms, 1);
    }
}

void read_dead_letter(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_map(n, "deadLetter")) {
        return;
    }
    if (reader::present(n["refusedSignatureRetention"])) {
        // Removed: a shorter life broke the advertised retention (RFC 0232 §C).
        r.error(n["refusedSignatureRetention"].Mark(),
                "deadLetter.refusedSignatureRetention: removed; a refused signature's dead letter "
                "is kept deadLetter.retentionDays like every dead letter, as discovery advertises. "
                "Delete the key; bound forged floods with deadLetter.refusedSignatureRecords");
    }
    r.check_keys(
        n, "deadLetter",
        {"retentionDays", "maxPageSize", "refusedSignatureRetention", "refusedSignatureRecords"});
    YAML::Node records = n["refusedSignatureRecords"];
    const std::string records_path = "deadLetter.refusedSignatureRecords";
    if (reader::present(records) && r.expect_map(records, records_path)) {
        r.check_keys(records, records_path, {"perSubscription", "total"});
        // `off` writes every refusal, as before the budget.
        read_rate_limit_or_off(r, records["perSubscription"], records_path + ".perSubscription",
                               c.dead_letter.refused_records_per_subscription);
        read_rate_limit_or_off(r, records["total"], records_path + ".total",
                               c.dead_letter.refused_records_total);
    }
    r.integer_into(n, "retentionDays", "deadLetter", c.dead_letter.retention_days, 1, 36500);
    r.integer_into(n, "maxPageSize", "deadLetter", c.dead_letter.max_page_size, 1, 1000);
}

// attachments.retention is checked against the retentions it must outlast: a dead letter can be
// replayed (and a provider's repeat answered from dedup) until they end, and the event that comes
// back refers to the attachment's bytes.
void read_attachments(reader& r, const YAML::Node& n, config& c) {
    constexpr millis day = 24LL * 3600 * 1000;
    const millis floor = std::max<millis>(c.dead_letter.retention_days * day,
                                          std::max<millis>(c.delivery.dedup_retention_ms, day));
    c.attachments.retention_ms = std::max<millis>(14 * day, floor + 7 * day);
    if (!reader::present(n) || !r.expect_map(n, "attachments")) {
        return;
    }
    r.check_keys(n, "attachments", {"retention"});
    millis retention = 0;
    if (!r.duration(n, "retention", "attachments", retention, 3600 * 1000)) {
        return;
    }
    if (retention < floor) {
        r.error(n["retention"].Mark(),
                "attachments.retention: must be at least " + std::to_string(floor / 3600000) +
                    "h, the longer of deadLetter.retentionDays and delivery.dedupRetention (a "
                    "replayed dead letter must still find its attachments)");
        return;
    }
    c.attachments.retention_ms = retention;
    c.attachments.retention_set = true;
}

} // namespace wopbridge::config_detail
