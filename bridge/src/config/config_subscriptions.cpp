// `connectors:` and `subscriptions:`, which name each other and runs.local.workflows.
#include "config/config_reader.hpp"

#include "intake/provider_catalogue.hpp"
#include "intake/webhook_intake.hpp"
#include "schedule/cron.hpp"

#include <set>

namespace wopbridge::config_detail {
namespace {

// provider: a catalogue entry; the subscription's secret(s) must have the entry's shape.
void read_provider(reader& r, const YAML::Node& s, const std::string& path, subscription_config& sc) {
    if (!reader::present(s["provider"]) || !r.str(s, "provider", path, sc.provider, false, true)) {
        return;
    }
    const auto* p = providers::find(sc.provider);
    if (p == nullptr) {
        std::string known;
        for (const auto& n : providers::names()) {
            known += (known.empty() ? "" : ", ") + n;
        }
        r.error(s["provider"].Mark(), path + ".provider: unknown provider '" + sc.provider +
                                          "' (the catalogue has: " + known + ")");
        sc.provider.clear();
        return;
    }
    if (sc.source != source_kind::webhook || !sc.connector.empty()) {
        r.error(s["provider"].Mark(),
                path + ".provider: only for source: webhook without a connector");
        return;
    }
    if (sc.verification == verification_mode::none) {
        return;
    }
    if (sc.signing_secret.empty()) {
        r.error(s["provider"].Mark(), path + ".signingSecret: provider " + sc.provider +
                                          " needs it: " + p->secret_describe);
        return;
    }
    int n = 0;
    for (const auto& secret : intake::split_secrets(sc.signing_secret)) {
        ++n;
        if (!providers::secret_fits(*p, secret)) {
            // The value is a secret: its place and the expected shape only.
            r.error(s["signingSecret"].Mark(),
                    path + ".signingSecret: secret " + std::to_string(n) + " is not of the shape " +
                        sc.provider + " uses: " + p->secret_describe +
                        " (several, for a rotation, separated by spaces or commas)");
        }
    }
}

} // namespace

void read_connectors(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_seq(n, "connectors")) {
        return;
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string path = "connectors[" + std::to_string(i) + "]";
        YAML::Node k = n[i];
        if (!r.expect_map(k, path)) {
            continue;
        }
        r.check_keys(k, path, {"name", "module", "settings"});
        connector_config cc;
        if (r.str(k, "name", path, cc.name, false, true)) {
            if (!valid_id(cc.name)) {
                r.error(k["name"].Mark(), path + ".name: '" + cc.name +
                                              "' may only contain letters, digits, '-', '_' and '.'");
            } else if (!seen.insert(cc.name).second) {
                r.error(k["name"].Mark(), path + ".name: duplicate connector name '" + cc.name + "'");
            }
        }
        r.str(k, "module", path, cc.module, false, true);
        cc.settings_json = r.settings_json(k, "settings", path, cc.settings_at);
        c.connectors.push_back(std::move(cc));
    }
}

void read_subscriptions(reader& r, const YAML::Node& n, config& c) {
    if (!r.expect_seq(n, "subscriptions")) {
        return;
    }
    std::set<std::string> seen;
    std::set<std::string> connectors;
    for (const auto& k : c.connectors) {
        connectors.insert(k.name);
    }
    std::set<std::string> workflows;
    for (const auto& w : c.runs.workflows) {
        workflows.insert(w.id);
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
        const std::string path = "subscriptions[" + std::to_string(i) + "]";
        YAML::Node s = n[i];
        if (!r.expect_map(s, path)) {
            continue;
        }
        r.check_keys(s, path,
                     {"id", "tenant", "source", "connector", "workflowId", "schedule",
                      "verification", "signingSecret", "retryPolicy", "dedup", "settings",
                      "whenNotActive", "rateLimit", "maxConcurrency", "ordering", "provider"});
        subscription_config sc;
        sc.line = s.Mark().line + 1;
        sc.column = s.Mark().column + 1;
        if (r.str(s, "id", path, sc.id, false, true)) {
            if (!valid_id(sc.id)) {
                r.error(s["id"].Mark(), path + ".id: '" + sc.id +
                                            "' may only contain letters, digits, '-', '_' and '.'");
            } else if (!seen.insert(sc.id).second) {
                r.error(s["id"].Mark(), path + ".id: duplicate subscription id '" + sc.id + "'");
            }
        }
        r.str(s, "tenant", path, sc.tenant);
        bool source_given = false;
        if (auto src = r.choice(s, "source", path, {"webhook", "schedule", "queue", "email", "form"})) {
            static constexpr source_kind kinds[] = {source_kind::webhook, source_kind::schedule,
                                                    source_kind::queue, source_kind::email,
                                                    source_kind::form};
            sc.source = kinds[*src];
            source_given = true;
        }
        if (r.str(s, "connector", path, sc.connector) && !connectors.count(sc.connector)) {
            r.error(s["connector"].Mark(), path + ".connector: unknown connector '" + sc.connector +
                                               "' (not declared under connectors)");
        }
        if (r.str(s, "workflowId", path, sc.workflow_id, false, true) &&
            c.runs.mode == runs_config::mode_kind::local && !workflows.count(sc.workflow_id)) {
            r.error(s["workflowId"].Mark(), path + ".workflowId: unknown workflow '" + sc.workflow_id +
                                                "' (not declared under runs.local.workflows)");
        }
        YAML::Node sched = s["schedule"];
        if (reader::present(sched)) {
            if (!source_given) {
                sc.source = source_kind::schedule;
            } else if (sc.source != source_kind::schedule) {
                r.error(sched.Mark(), path + ".schedule: only valid with source: schedule");
            }
            if (r.expect_map(sched, path + ".schedule")) {
                r.check_keys(sched, path + ".schedule", {"cron", "timeZone"});
                schedule_spec spec;
                r.str(sched, "timeZone", path + ".schedule", spec.time_zone);
                if (r.str(sched, "cron", path + ".schedule", spec.cron, false, true)) {
                    auto parsed = cron_expr::parse(spec.cron, spec.time_zone);
                    if (!parsed) {
                        YAML::Node at = parsed.error().message.find("time zone") != std::string::npos &&
                                                reader::present(sched["timeZone"])
                                            ? sched["timeZone"]
                                            : sched["cron"];
                        r.error(at.Mark(), path + ".schedule: " + parsed.error().message);
                    } else {
                        sc.schedule = spec;
                    }
                }
            }
        } else if (sc.source == source_kind::schedule) {
            r.error(s.Mark(), path + ": source schedule needs a schedule: {cron: ...}");
        }
        YAML::Node ver = s["verification"];
        if (reader::present(ver) && r.expect_map(ver, path + ".verification")) {
            r.check_keys(ver, path + ".verification", {"mode"});
            if (auto m = r.choice(ver, "mode", path + ".verification", {"required", "best-effort", "none"})) {
                static constexpr verification_mode modes[] = {verification_mode::required,
                                                              verification_mode::best_effort,
                                                              verification_mode::none};
                sc.verification = modes[*m];
            }
        }
        r.str(s, "signingSecret", path, sc.signing_secret, true);
        read_provider(r, s, path, sc);
        if (reader::present(s["retryPolicy"])) {
            retry_policy rp = c.delivery.retry;
            std::size_t before = r.errors.size();
            read_retry(r, s["retryPolicy"], path + ".retryPolicy", rp);
            if (r.errors.size() == before) {
                sc.retry = rp;
            }
        }
        r.boolean(s, "dedup", path, sc.dedup);
        if (reader::present(s["whenNotActive"])) {
            if (auto m = r.choice(s, "whenNotActive", path, {"refuse", "hold"})) {
                sc.hold_when_not_active = *m == 1;
            }
        }
        r.integer_into(s, "maxConcurrency", path, sc.max_concurrency, 1, 100000);
        if (reader::present(s["ordering"])) {
            if (auto m = r.choice(s, "ordering", path, {"none", "perSubscription"}); m && *m == 1) {
                if (reader::present(s["maxConcurrency"]) && sc.max_concurrency != 1) {
                    r.error(s["maxConcurrency"].Mark(),
                            path + ".maxConcurrency: ordering: perSubscription starts one run at a "
                                   "time; drop maxConcurrency or set it to 1");
                }
                sc.max_concurrency = 1;
            }
        }
        if (reader::present(s["rateLimit"])) {
            rate_limit rl;
            std::size_t before = r.errors.size();
            read_rate_limit(r, s["rateLimit"], path + ".rateLimit", rl);
            if (r.errors.size() == before) {
                sc.rate_limit_override = rl;
            }
        }
        sc.settings_json = r.settings_json(s, "settings", path, sc.settings_at);
        c.subscriptions.push_back(std::move(sc));
    }
}

} // namespace wopbridge::config_detail
