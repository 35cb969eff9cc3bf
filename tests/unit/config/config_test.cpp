#include "config/config.hpp"
#include "store/postgres/postgres_backend.hpp"
#include "store/sqlite/sqlite_backend.hpp"
#include "store/store_backend.hpp"

#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace wopbridge {
namespace {

using ::testing::HasSubstr;

constexpr const char* full_example = R"(server: {listen: "127.0.0.1:8080", publicUrl: "http://127.0.0.1:8080", maxBodyBytes: 1048576, threads: 2, tls: {certFile: certs/server.pem, keyFile: certs/server.key}}
auth:
  apiKeys:
    - {key: "${WOPBRIDGE_API_KEY}", tenant: default, scopes: [runs:create, runs:read, webhooks:manage]}
store: {sqlite: {path: var/wopbridge.db}}
runs:
  local:
    workflows:
      - id: conformance-noop
      - {id: support-triage, command: [examples/quickstart/on-trigger.sh], timeout: 10m, env: {K: V}}
delivery: {retryPolicy: {maxAttempts: 8, backoff: exponential, baseDelay: 1s, maxDelay: 5m, jitter: true}, dedupRetention: 24h, maxInFlight: 64, attemptTimeout: 30s, breaker: {failureThreshold: 5, probeInterval: 30s}}
deadLetter: {retentionDays: 7, maxPageSize: 100}
connectors:
  - {name: slack, module: slack, settings: {signingSecret: "${SLACK_SIGNING_SECRET}"}}
subscriptions:
  - {id: support-inbox, connector: slack, workflowId: support-triage, settings: {channel: C123, limit: 5, strict: true}}
  - {id: nightly, source: schedule, schedule: {cron: "0 2 * * *", timeZone: UTC}, workflowId: conformance-noop}
  - {id: partner-hooks, source: webhook, workflowId: support-triage, verification: {mode: required},
     signingSecret: "${PARTNER_WHSEC}", retryPolicy: {maxAttempts: 5, backoff: fixed}, dedup: true, tenant: default}
hostKeyFile: var/host.key
logging: {level: info}
testSeams: false
)";

class ConfigTest : public ::testing::Test {
protected:
    testing::temp_dir dir_;
    std::map<std::string, std::string> env_{{"WOPBRIDGE_API_KEY", "key-123"},
                                            {"SLACK_SIGNING_SECRET", "slack-secret"},
                                            {"PARTNER_WHSEC", "whsec_partner"}};

    env_lookup env() {
        return [this](const std::string& n) -> std::optional<std::string> {
            auto it = env_.find(n);
            return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
    }
    config_load_result parse(const std::string& text) {
        return parse_config(text, "test.yaml", dir_.path(), env());
    }
    std::vector<std::string> errors(const std::string& text) {
        std::vector<std::string> out;
        for (const auto& e : parse(text).errors) {
            out.push_back(e.to_string());
        }
        return out;
    }
    std::string one_error(const std::string& text) {
        auto e = errors(text);
        EXPECT_EQ(e.size(), 1u) << ::testing::PrintToString(e);
        return e.empty() ? std::string() : e[0];
    }
    static constexpr const char* base = "runs: {local: {workflows: [{id: wf}]}}\n";
};

TEST_F(ConfigTest, LoadsTheFullExample) {
    auto path = dir_.file("wopbridge.yaml");
    std::ofstream(path) << full_example;
    auto r = load_config(path, env());
    ASSERT_TRUE(r) << ::testing::PrintToString(r.errors.empty() ? "" : r.errors[0].to_string());
    const config& c = *r.value;
    const auto d = dir_.path().string();
    EXPECT_EQ(c.server.listen_host, "127.0.0.1");
    EXPECT_EQ(c.server.listen_port, 8080);
    EXPECT_EQ(c.server.public_url, "http://127.0.0.1:8080");
    ASSERT_TRUE(c.server.tls);
    EXPECT_EQ(c.server.tls->cert_file, d + "/certs/server.pem");
    ASSERT_EQ(c.api_keys.size(), 1u);
    EXPECT_EQ(c.api_keys[0].key, "key-123");
    EXPECT_EQ(c.api_keys[0].scopes.size(), 3u);
    ASSERT_NE(sqlite_settings_of(c.store), nullptr);
    EXPECT_EQ(sqlite_settings_of(c.store)->path, d + "/var/wopbridge.db");
    ASSERT_EQ(c.runs.workflows.size(), 2u);
    EXPECT_TRUE(c.runs.workflows[0].command.empty());
    EXPECT_EQ(c.runs.workflows[1].command[0], d + "/examples/quickstart/on-trigger.sh");
    EXPECT_EQ(c.runs.workflows[1].timeout_ms, 600000);
    EXPECT_EQ(c.runs.workflows[1].env.at(0).second, "V");
    EXPECT_EQ(c.delivery.retry.max_attempts, 8);
    EXPECT_EQ(c.delivery.retry.max_delay_ms, 300000);
    EXPECT_EQ(c.delivery.breaker.probe_interval_ms, 30000);
    EXPECT_EQ(c.host_key_file, d + "/var/host.key");
    EXPECT_EQ(boost::json::parse(c.connectors[0].settings_json).at("signingSecret"), "slack-secret");
    auto settings = boost::json::parse(c.subscriptions[0].settings_json);
    EXPECT_EQ(settings.at("limit"), 5);
    EXPECT_EQ(settings.at("strict"), true);
    EXPECT_EQ(settings.at("channel"), "C123");

    std::map<std::string, std::string> secrets;
    auto subs = make_subscriptions(c, secrets);
    ASSERT_EQ(subs.size(), 3u);
    EXPECT_EQ(subs[1].source, source_kind::schedule);
    EXPECT_EQ(subs[1].schedule->cron, "0 2 * * *");
    EXPECT_EQ(subs[2].retry.max_attempts, 5);
    EXPECT_EQ(subs[2].retry.backoff, backoff_kind::fixed);
    EXPECT_EQ(subs[0].retry.max_attempts, 8);
    EXPECT_EQ(subs[0].origin, subscription::origin_kind::config);
    EXPECT_EQ(secrets.at("partner-hooks"), "whsec_partner");
    EXPECT_EQ(secrets.size(), 1u);

    auto s = make_bridge_settings(c);
    EXPECT_EQ(s.local_workflows, (std::vector<std::string>{"conformance-noop", "support-triage"}));
    EXPECT_EQ(s.host_key_file, d + "/var/host.key");
    EXPECT_EQ(run_working_directory(c), d);
    auto starter = make_run_starter(c);
    EXPECT_EQ(starter->workflow_ids(), s.local_workflows);
    EXPECT_FALSE(starter->starts_before_commit());
    EXPECT_TRUE(load_config(path, env()));
}

TEST_F(ConfigTest, MissingEnvironmentVariableIsAnError) {
    env_.erase("PARTNER_WHSEC");
    auto e = errors(full_example);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0], "test.yaml:19:21: subscriptions[2].signingSecret: environment variable "
                    "PARTNER_WHSEC is not set");
}

TEST_F(ConfigTest, DollarDollarEscapes) {
    auto r = parse(std::string(base) + "hostKeyFile: \"a$${B}\"\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value->host_key_file, dir_.file("a${B}"));
}

TEST_F(ConfigTest, FileSecretsAreReadAndTrimmed) {
    std::ofstream(dir_.file("whsec.txt")) << "  whsec_from_file\n";
    auto r = parse(std::string(base) + "subscriptions:\n  - {id: a, workflowId: wf, signingSecret: "
                                       "file:whsec.txt}\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value->subscriptions[0].signing_secret, "whsec_from_file");
    auto k = parse(std::string(base) + "connectors: [{name: c, module: m, settings: {token: "
                                       "file:whsec.txt, nested: {list: [file:whsec.txt]}}}]\n");
    ASSERT_TRUE(k);
    auto settings = boost::json::parse(k.value->connectors[0].settings_json);
    EXPECT_EQ(settings.at("token"), "whsec_from_file");
    EXPECT_EQ(settings.at("nested").at("list").at(0), "whsec_from_file");
    EXPECT_EQ(one_error(std::string(base) + "auth: {apiKeys: [{key: file:/nonexistent/k}]}\n"),
              "test.yaml:2:24: auth.apiKeys[0].key: cannot read secret file /nonexistent/k");
}

// Sealed connector secrets are stored as {"$sealed": ...}: no settings object may claim the key.
TEST_F(ConfigTest, TheSealedKeyIsReservedInConnectorSettings) {
    EXPECT_THAT(one_error(std::string(base) + "connectors: [{name: c, module: m}]\n" +
                          "subscriptions:\n  - {id: a, workflowId: wf, connector: c,\n"
                          "     settings: {token: {$sealed: \"v1:AAAA\"}}}\n"),
                HasSubstr("subscriptions[0].settings.token: the key $sealed is reserved"));
}

TEST_F(ConfigTest, UnknownKeySuggestsTheClosest) {
    EXPECT_EQ(one_error("server: {listn: \"127.0.0.1:1\"}\n"),
              "test.yaml:1:10: server: unknown key 'listn' (did you mean 'listen'?)");
    EXPECT_EQ(one_error("delivery:\n  retryPolcy: {}\n"),
              "test.yaml:2:3: delivery: unknown key 'retryPolcy' (did you mean 'retryPolicy'?)");
    EXPECT_EQ(one_error("frobnicate: 1\n"), "test.yaml:1:1: unknown key 'frobnicate'");
}

TEST_F(ConfigTest, ReportsEachErrorKindAtItsPosition) {
    EXPECT_EQ(one_error("server:\n  threads: many\n"),
              "test.yaml:2:12: server.threads: expected an integer, got 'many'");
    EXPECT_EQ(one_error("delivery:\n  attemptTimeout: 10q\n"),
              "test.yaml:2:19: delivery.attemptTimeout: '10q' is not a duration (use e.g. 500ms, "
              "30s, 10m, 24h, 1h30m)");
    EXPECT_EQ(one_error("delivery: {dedupRetention: 1h}\n"),
              "test.yaml:1:28: delivery.dedupRetention: must be at least 24h");
    EXPECT_EQ(one_error("server: {listen: \"nohost\"}\n"),
              "test.yaml:1:18: server.listen: 'nohost' is not a valid address (expected host:port, "
              "e.g. 127.0.0.1:8080 or [::1]:8080)");
    EXPECT_EQ(one_error("delivery:\n  retryPolicy: {backoff: linear}\n"),
              "test.yaml:2:26: delivery.retryPolicy.backoff: invalid value 'linear' (expected one "
              "of: none, fixed, exponential)");
    EXPECT_EQ(one_error("testSeams: yes please\n"),
              "test.yaml:1:12: testSeams: expected true or false, got 'yes please'");
    EXPECT_EQ(one_error(std::string(base) + "subscriptions:\n  - {id: a, workflowId: wf}\n"
                                            "  - {id: a, workflowId: wf}\n"),
              "test.yaml:4:10: subscriptions[1].id: duplicate subscription id 'a'");
    EXPECT_EQ(one_error(std::string(base) + "subscriptions:\n  - {id: a, workflowId: nope}\n"),
              "test.yaml:3:25: subscriptions[0].workflowId: unknown workflow 'nope' (not declared "
              "under runs.local.workflows)");
    EXPECT_EQ(one_error(std::string(base) + "subscriptions:\n  - {id: a, workflowId: wf, connector: x}\n"),
              "test.yaml:3:40: subscriptions[0].connector: unknown connector 'x' (not declared "
              "under connectors)");
    EXPECT_EQ(one_error(std::string(base) + "subscriptions:\n  - id: a\n    workflowId: wf\n"
                                            "    schedule: {cron: \"61 * * * *\"}\n"),
              "test.yaml:5:22: subscriptions[0].schedule: minute field: 61 is out of range 0-59");
    EXPECT_EQ(one_error("logging: {level: loud}\n"),
              "test.yaml:1:18: logging.level: invalid value 'loud' (expected one of: trace, debug, "
              "info, warn, error)");
    EXPECT_EQ(one_error("server: [1, 2]\n"), "test.yaml:1:9: server: expected a mapping");
    EXPECT_EQ(one_error("server: {threads: [2]}\n"),
              "test.yaml:1:19: server.threads: expected an integer");
}

TEST_F(ConfigTest, UpstreamSkipsTheWorkflowCheck) {
    env_["UP"] = "tok";
    auto r = parse("runs: {upstream: {baseUrl: \"http://h:1/\", apiKey: \"${UP}\", timeout: 5s}}\n"
                   "subscriptions: [{id: a, workflowId: anything}]\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value->runs.mode, runs_config::mode_kind::upstream);
    EXPECT_EQ(r.value->runs.upstream.base_url, "http://h:1");
    EXPECT_EQ(r.value->runs.upstream.api_key, "tok");
    EXPECT_EQ(r.value->runs.upstream.timeout_ms, 5000);
    EXPECT_TRUE(make_bridge_settings(*r.value).local_workflows.empty());
}

TEST_F(ConfigTest, PostgresStoreIsParsed) {
    auto r = parse(std::string(base) + "store: {postgres: {url: \"postgresql://u@h/db\"}}\n");
    ASSERT_TRUE(r);
    ASSERT_NE(postgres_settings_of(r.value->store), nullptr);
    EXPECT_EQ(r.value->store.backend->backend_name(), "postgres");
    EXPECT_EQ(postgres_settings_of(r.value->store)->url, "postgresql://u@h/db");
    EXPECT_EQ(make_bridge_settings(*r.value).node_timeout_ms, 10000);
    auto tuned = parse(std::string(base) +
                       "store: {postgres: {url: \"postgresql://u@h/db\", nodeTimeout: 4s}}\n");
    ASSERT_TRUE(tuned);
    EXPECT_EQ(make_bridge_settings(*tuned.value).node_timeout_ms, 4000);
    auto e = errors(std::string(base) +
                    "store: {postgres: {url: \"postgresql://u@h/db\", nodeTimeout: 1s}}\n");
    EXPECT_THAT(e, ::testing::Contains(HasSubstr("store.postgres.nodeTimeout: must be at least 3s")));
}

TEST_F(ConfigTest, SqliteCommitWindowIsParsedAndBounded) {
    auto plain = parse(std::string(base) + "store: {sqlite: {path: x.db}}\n");
    ASSERT_TRUE(plain);
    EXPECT_EQ(sqlite_settings_of(plain.value->store)->commit_window_ms, 1);
    auto off = parse(std::string(base) + "store: {sqlite: {path: x.db, commitWindow: 0ms}}\n");
    ASSERT_TRUE(off);
    EXPECT_EQ(sqlite_settings_of(off.value->store)->commit_window_ms, 0);
    auto tuned = parse(std::string(base) + "store: {sqlite: {path: x.db, commitWindow: 3ms}}\n");
    ASSERT_TRUE(tuned);
    EXPECT_EQ(sqlite_settings_of(tuned.value->store)->commit_window_ms, 3);
    auto e = errors(std::string(base) + "store: {sqlite: {path: x.db, commitWindow: 1s}}\n");
    EXPECT_THAT(e, ::testing::Contains(HasSubstr("store.sqlite.commitWindow: at most 50ms")));
}

TEST_F(ConfigTest, YamlSyntaxErrorHasItsMark) {
    auto e = errors("server:\n  listen: [1, 2\n");
    ASSERT_EQ(e.size(), 1u);
    EXPECT_THAT(e[0], ::testing::StartsWith("test.yaml:3:1: YAML syntax error: "));
}

// yaml-cpp calls a tab in the indentation an "illegal map value" somewhere after it; the reader
// names the tab itself, at its line and column.
TEST_F(ConfigTest, ATabInTheIndentationIsNamedAtItsPlace) {
    auto e = errors("server:\n  listen: \"127.0.0.1:0\"\nauth:\n\tapiKeys: []\n");
    ASSERT_EQ(e.size(), 1u) << ::testing::PrintToString(e);
    EXPECT_EQ(e[0], "test.yaml:4:1: YAML syntax error: a tab in the indentation (YAML indents with "
                    "spaces only); fix: replace it with spaces");
}

TEST_F(ConfigTest, ReportsAllErrorsTogether) {
    auto e = errors("server: {threads: 0, listn: x}\n"
                    "delivery: {dedupRetention: 2h, maxInFlight: -1}\n"
                    "deadLetter: {maxPageSize: 5000}\n");
    EXPECT_EQ(e.size(), 5u) << ::testing::PrintToString(e);
    EXPECT_THAT(e, ::testing::Contains(HasSubstr("server.threads: 0 is out of range 1-256")));
    EXPECT_THAT(e, ::testing::Contains(HasSubstr("unknown key 'listn'")));
    EXPECT_THAT(e, ::testing::Contains(HasSubstr("dedupRetention: must be at least 24h")));
    EXPECT_THAT(e, ::testing::Contains(HasSubstr("maxInFlight: -1 is out of range")));
    EXPECT_THAT(e, ::testing::Contains(HasSubstr("maxPageSize: 5000 is out of range 1-1000")));
}

TEST_F(ConfigTest, LoadingReportsPositionsAndAMissingFile) {
    auto path = dir_.file("bad.yaml");
    std::ofstream(path) << "server: {threads: x}\n";
    auto bad = load_config(path, env());
    ASSERT_FALSE(bad);
    ASSERT_EQ(bad.errors.size(), 1u);
    EXPECT_EQ(bad.errors[0].to_string(), path + ":1:19: server.threads: expected an integer, got 'x'");
    auto missing = load_config(dir_.file("missing.yaml"), env());
    ASSERT_FALSE(missing);
    EXPECT_THAT(missing.errors[0].to_string(), HasSubstr("cannot open the file"));
}

TEST_F(ConfigTest, UnknownScopeIsRefusedWithItsPositionAndTheValidScopes) {
    auto e = errors(std::string(base) + "auth:\n  apiKeys:\n"
                                        "    - {key: \"${WOPBRIDGE_API_KEY}\", scopes: [runs:read, runs:reed]}\n");
    ASSERT_EQ(e.size(), 1u) << ::testing::PrintToString(e);
    EXPECT_EQ(e[0], "test.yaml:4:57: auth.apiKeys[0].scopes[1]: 'runs:reed' is not a scope "
                    "(expected one of runs:create, runs:read, webhooks:manage)");
    EXPECT_THAT(e[0], ::testing::Not(HasSubstr("key-123")));
    // Well-formed resource:action is not enough: only the scopes a route checks.
    EXPECT_THAT(one_error(std::string(base) +
                          "auth: {apiKeys: [{key: k, scopes: [runs:cancel]}]}\n"),
                HasSubstr("'runs:cancel' is not a scope"));
    // A ${VAR} is quoted as written, never expanded into the message.
    env_["SCOPE"] = "s3cr3t:value";
    auto var = one_error(std::string(base) + "auth: {apiKeys: [{key: k, scopes: [\"${SCOPE}\"]}]}\n");
    EXPECT_THAT(var, HasSubstr("'${SCOPE}' is not a scope"));
    EXPECT_THAT(var, ::testing::Not(HasSubstr("s3cr3t")));
    EXPECT_TRUE(parse(std::string(base) +
                      "auth: {apiKeys: [{key: k, scopes: [runs:create, runs:read, webhooks:manage]}]}\n"));
}

TEST_F(ConfigTest, SecretsNeverAppearInErrors) {
    env_["SECRET"] = "s3cr3t-value";
    auto e = errors("server: {publicUrl: \"${SECRET}\"}\n");
    ASSERT_EQ(e.size(), 1u);
    // publicUrl is not a secret field, so its value may be quoted; secret fields never are.
    auto e2 = errors("auth: {apiKeys: [{key: \"${SECRET}\", scopes: [bad]}]}\n");
    ASSERT_EQ(e2.size(), 1u);
    EXPECT_THAT(e2[0], ::testing::Not(HasSubstr("s3cr3t")));
}

// Every key the schema documents is a key the loader accepts, at every level.
std::string yaml_of_schema(const boost::json::object& schema, const boost::json::object& node,
                           int indent) {
    const boost::json::object* n = &node;
    if (auto* ref = node.if_contains("$ref")) {
        std::string name(ref->as_string());
        n = &schema.at("$defs").at(name.substr(name.rfind('/') + 1)).as_object();
    }
    std::string out;
    auto* props = n->if_contains("properties");
    if (!props) {
        return out;
    }
    for (const auto& [k, v] : props->as_object()) {
        const auto& child = v.as_object();
        out += std::string(indent, ' ') + std::string(k) + ":";
        std::string inner = yaml_of_schema(schema, child, indent + 4);
        if (auto* items = child.if_contains("items"); items && items->is_object()) {
            std::string item = yaml_of_schema(schema, items->as_object(), indent + 4);
            out += item.empty() ? " ~\n" : "\n" + std::string(indent + 2, ' ') + "-\n" + item;
        } else {
            out += inner.empty() ? " ~\n" : "\n" + inner;
        }
    }
    return out;
}

TEST_F(ConfigTest, SchemaKeysAreAllAccepted) {
    std::ifstream in(std::string(WOPBRIDGE_SOURCE_DIR) + "/schemas/wopbridge-config.schema.json");
    ASSERT_TRUE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    auto schema = boost::json::parse(ss.str()).as_object();
    std::string yaml = yaml_of_schema(schema, schema, 0);
    ASSERT_THAT(yaml, HasSubstr("probeInterval"));
    for (const auto& e : errors(yaml)) {
        EXPECT_THAT(e, ::testing::Not(HasSubstr("unknown key"))) << yaml;
    }
    EXPECT_THAT(errors(yaml + "bogus: 1\n"), ::testing::Contains(HasSubstr("unknown key 'bogus'")));
}

TEST_F(ConfigTest, ReadsOverloadBoundsAndRateLimits) {
    auto c = parse("server: {maxConnections: 500, maxInFlightRequests: 32,\n"
                   "  rateLimits: {perSubscription: {rate: 0.5, burst: 4}, perSourceAddress: {rate: 20}}}\n"
                   "runs: {local: {workflows: [{id: wf}]}}\n"
                   "subscriptions:\n"
                   "  - {id: a, workflowId: wf, signingSecret: whsec_x, rateLimit: {rate: 100, burst: 200}}\n"
                   "  - {id: b, workflowId: wf, signingSecret: whsec_x}\n");
    ASSERT_TRUE(c) << (c.errors.empty() ? "" : c.errors[0].to_string());
    EXPECT_EQ(c.value->server.max_connections, 500);
    EXPECT_EQ(c.value->server.max_in_flight_requests, 32);
    EXPECT_DOUBLE_EQ(c.value->server.per_subscription.rate, 0.5);
    EXPECT_DOUBLE_EQ(c.value->server.per_subscription.burst, 4);
    EXPECT_DOUBLE_EQ(c.value->server.per_source_address.rate, 20);
    EXPECT_DOUBLE_EQ(c.value->server.per_source_address.burst, 20); // burst defaults to ceil(rate)
    auto overrides = subscription_rate_limits(*c.value);
    ASSERT_EQ(overrides.size(), 1u);
    EXPECT_DOUBLE_EQ(overrides.at("a").rate, 100);
    EXPECT_DOUBLE_EQ(overrides.at("a").burst, 200);

    auto d = parse("server: {}\n");
    ASSERT_TRUE(d);
    EXPECT_FALSE(d.value->server.per_subscription.enabled());
    EXPECT_EQ(d.value->server.max_in_flight_requests, 1024);
}

// attachments.retention: 14 days by default (longer than the dead-letter and dedup retention, so
// a replay finds its bytes), raised with deadLetter.retentionDays when unset, refused below them.
TEST_F(ConfigTest, AttachmentRetentionOutlastsDeadLetterAndDedupRetention) {
    constexpr millis hour = 3600 * 1000;
    auto d = parse(base);
    ASSERT_TRUE(d) << d.errors[0].to_string();
    EXPECT_EQ(d.value->attachments.retention_ms, 14 * 24 * hour);
    auto longer = parse(std::string(base) + "deadLetter: {retentionDays: 30}\n");
    ASSERT_TRUE(longer);
    EXPECT_EQ(longer.value->attachments.retention_ms, 37 * 24 * hour);
    auto set = parse(std::string(base) + "attachments: {retention: 200h}\n");
    ASSERT_TRUE(set) << set.errors[0].to_string();
    EXPECT_EQ(set.value->attachments.retention_ms, 200 * hour);

    EXPECT_EQ(one_error(std::string(base) + "attachments:\n  retention: 100h\n"),
              "test.yaml:3:14: attachments.retention: must be at least 168h, the longer of "
              "deadLetter.retentionDays and delivery.dedupRetention (a replayed dead letter must "
              "still find its attachments)");
    EXPECT_EQ(one_error(std::string(base) +
                        "delivery: {dedupRetention: 240h}\nattachments: {retention: 200h}\n"),
              "test.yaml:3:26: attachments.retention: must be at least 240h, the longer of "
              "deadLetter.retentionDays and delivery.dedupRetention (a replayed dead letter must "
              "still find its attachments)");
    EXPECT_THAT(one_error(std::string(base) + "attachments: {retention: soon}\n"),
                HasSubstr("attachments.retention: 'soon' is not a duration"));
    EXPECT_THAT(one_error(std::string(base) + "attachments: {keep: 1h}\n"),
                HasSubstr("attachments: unknown key 'keep'"));
}

TEST_F(ConfigTest, ReadsDeliveryThroughputAndPerSubscriptionConcurrency) {
    auto c = parse("runs: {local: {workflows: [{id: wf}]}}\n"
                   "delivery: {concurrency: 300, batchSize: 64}\n"
                   "subscriptions:\n"
                   "  - {id: a, workflowId: wf, signingSecret: whsec_x, maxConcurrency: 4}\n"
                   "  - {id: b, workflowId: wf, signingSecret: whsec_x, ordering: perSubscription}\n"
                   "  - {id: c, workflowId: wf, signingSecret: whsec_x}\n");
    ASSERT_TRUE(c) << (c.errors.empty() ? "" : c.errors[0].to_string());
    EXPECT_EQ(c.value->delivery.max_in_flight, 300);
    EXPECT_EQ(c.value->delivery.batch_size, 64);
    ASSERT_EQ(c.value->subscriptions.size(), 3u);
    EXPECT_EQ(c.value->subscriptions[0].max_concurrency, 4);
    EXPECT_EQ(c.value->subscriptions[1].max_concurrency, 1);
    EXPECT_EQ(c.value->subscriptions[2].max_concurrency, 0);
    std::map<std::string, std::string> secrets;
    auto subs = make_subscriptions(*c.value, secrets);
    ASSERT_EQ(subs.size(), 3u);
    EXPECT_EQ(subs[1].max_concurrency, 1);

    EXPECT_THAT(errors("delivery: {concurrency: 10, maxInFlight: 10}\n"),
                ::testing::Contains(HasSubstr("the earlier name of delivery.concurrency")));
    EXPECT_THAT(errors("runs: {local: {workflows: [{id: wf}]}}\n"
                       "subscriptions:\n"
                       "  - {id: a, workflowId: wf, signingSecret: whsec_x, "
                       "ordering: perSubscription, maxConcurrency: 3}\n"),
                ::testing::Contains(HasSubstr("drop maxConcurrency or set it to 1")));
    EXPECT_THAT(errors("runs: {local: {workflows: [{id: wf}]}}\n"
                       "subscriptions:\n"
                       "  - {id: a, workflowId: wf, signingSecret: whsec_x, ordering: fifo}\n"),
                ::testing::Contains(HasSubstr("ordering")));
}

TEST_F(ConfigTest, ReadsTheRefusedSignatureRecordBudget) {
    auto d = parse("server: {}\n");
    ASSERT_TRUE(d);
    EXPECT_DOUBLE_EQ(d.value->dead_letter.refused_records_per_subscription.rate, 0.2);
    EXPECT_DOUBLE_EQ(d.value->dead_letter.refused_records_per_subscription.burst, 100);
    EXPECT_DOUBLE_EQ(d.value->dead_letter.refused_records_total.rate, 1);
    EXPECT_DOUBLE_EQ(d.value->dead_letter.refused_records_total.burst, 1000);
    auto c = parse("deadLetter: {refusedSignatureRecords: {perSubscription: {rate: 0.5, burst: 7},"
                   " total: off}}\n");
    ASSERT_TRUE(c) << (c.errors.empty() ? "" : c.errors[0].to_string());
    EXPECT_DOUBLE_EQ(c.value->dead_letter.refused_records_per_subscription.rate, 0.5);
    EXPECT_DOUBLE_EQ(c.value->dead_letter.refused_records_per_subscription.burst, 7);
    EXPECT_FALSE(c.value->dead_letter.refused_records_total.enabled());
    EXPECT_EQ(make_bridge_settings(*c.value).refused_records_per_subscription.burst, 7);
    EXPECT_THAT(errors("deadLetter: {refusedSignatureRecords: {total: {rate: 0}}}\n"),
                ::testing::Contains(HasSubstr("deadLetter.refusedSignatureRecords.total.rate")));
    EXPECT_THAT(errors("deadLetter: {refusedSignatureRecords: {perAddress: off}}\n"),
                ::testing::Contains(HasSubstr("unknown key 'perAddress'")));
    // A shorter life for refused signatures broke the advertised retention; it is refused.
    EXPECT_THAT(errors("deadLetter: {refusedSignatureRetention: 24h}\n"),
                ::testing::Contains(::testing::AllOf(
                    HasSubstr("test.yaml:1:"), HasSubstr("deadLetter.refusedSignatureRetention: removed"),
                    HasSubstr("retentionDays"))));
}

TEST_F(ConfigTest, RefusesBadRateLimits) {
    EXPECT_THAT(errors("server: {rateLimits: {perSubscription: {rate: 0}}}\n"),
                ::testing::Contains(HasSubstr("server.rateLimits.perSubscription.rate")));
    EXPECT_THAT(errors("server: {rateLimits: {perSubscription: {rate: fast}}}\n"),
                ::testing::Contains(HasSubstr("expected a number")));
    EXPECT_THAT(errors("server: {rateLimits: {perSourceAddress: {burst: 3}}}\n"),
                ::testing::Contains(HasSubstr("perSourceAddress.rate: required")));
    EXPECT_THAT(errors("server: {rateLimits: {perSubscription: {rate: 1, burst: 0}}}\n"),
                ::testing::Contains(HasSubstr("burst")));
    EXPECT_THAT(errors("server: {rateLimits: {perTenant: {rate: 1}}}\n"),
                ::testing::Contains(HasSubstr("unknown key 'perTenant'")));
    EXPECT_THAT(errors("server: {maxInFlightRequests: 0}\n"),
                ::testing::Contains(HasSubstr("maxInFlightRequests")));
}

TEST_F(ConfigTest, TrustedProxiesAreAddressesOrBlocksAndNeverTheWholeInternet) {
    auto c = parse(std::string(base) + "server: {trustedProxies: [127.0.0.1, 10.0.0.0/8, 'fd00::/8']}\n");
    ASSERT_TRUE(c) << (c.errors.empty() ? "" : c.errors[0].to_string());
    ASSERT_EQ(c.value->server.trusted_proxies.size(), 3U);
    EXPECT_TRUE(address_in("10.9.8.7", c.value->server.trusted_proxies));
    EXPECT_FALSE(address_in("192.0.2.1", c.value->server.trusted_proxies));
    EXPECT_EQ(parse(std::string(base) + "server: {trustedProxies: 127.0.0.1}\n").value->server.trusted_proxies.size(), 1U);
    EXPECT_TRUE(parse(std::string(base) + "server: {}\n").value->server.trusted_proxies.empty());
    // The default budget counts refusals per address.
    EXPECT_DOUBLE_EQ(parse(std::string(base)).value->server.per_source_address.rate, 10);
    EXPECT_THAT(one_error("server:\n  trustedProxies: [127.0.0.1, nginx.local]\n"),
                ::testing::AllOf(HasSubstr("test.yaml:2:"), HasSubstr("server.trustedProxies[1]: 'nginx.local' is not an address")));
    EXPECT_THAT(one_error("server: {trustedProxies: [0.0.0.0/0]}\n"),
                ::testing::AllOf(HasSubstr("server.trustedProxies[0]"), HasSubstr("most of the internet")));
    EXPECT_THAT(one_error("server: {trustedProxies: ['::/0']}\n"), HasSubstr("most of the internet"));
    EXPECT_THAT(one_error("server: {trustedProxies: {a: 1}}\n"), HasSubstr("a list of addresses"));
}

} // namespace
} // namespace wopbridge

namespace wopbridge {
namespace {

class ConfigProviderTest : public ::testing::Test {
protected:
    testing::temp_dir dir_;
    config_load_result parse(const std::string& subscription) {
        return parse_config(std::string("runs: {local: {workflows: [{id: wf}]}}\nsubscriptions:\n") +
                                subscription,
                            "test.yaml", dir_.path(), [](const std::string&) { return std::nullopt; });
    }
    std::vector<std::string> errors(const std::string& subscription) {
        std::vector<std::string> out;
        for (const auto& e : parse(subscription).errors) {
            out.push_back(e.to_string());
        }
        return out;
    }
};

TEST_F(ConfigProviderTest, ANamedProviderWithASecretOfItsShapeIsRead) {
    auto c = parse("  - {id: gh, workflowId: wf, provider: github, signingSecret: 'old new'}\n");
    ASSERT_TRUE(c) << (c.errors.empty() ? "" : c.errors[0].to_string());
    EXPECT_EQ(c.value->subscriptions[0].provider, "github");
    std::map<std::string, std::string> secrets;
    EXPECT_EQ(make_subscriptions(*c.value, secrets)[0].provider, "github");
    EXPECT_EQ(secrets["gh"], "old new");
}

TEST_F(ConfigProviderTest, UnknownNamesMissingAndMisshapenSecretsAreRefusedWithTheirPlace) {
    EXPECT_THAT(errors("  - {id: a, workflowId: wf, provider: gitlab, signingSecret: x}\n"),
                ::testing::Contains(::testing::AllOf(HasSubstr("test.yaml:3:39:"),
                                                     HasSubstr("unknown provider 'gitlab'"),
                                                     HasSubstr("github"))));
    EXPECT_THAT(errors("  - {id: a, workflowId: wf, provider: stripe}\n"),
                ::testing::Contains(HasSubstr("subscriptions[0].signingSecret: provider stripe needs it")));
    auto misshapen = errors("  - {id: a, workflowId: wf, provider: stripe, signingSecret: sk_live_abcdefghijklmnop}\n");
    EXPECT_THAT(misshapen, ::testing::Contains(::testing::AllOf(
                               HasSubstr("signingSecret: secret 1 is not of the shape stripe uses"),
                               HasSubstr("whsec_"))));
    for (const auto& e : misshapen) {
        EXPECT_THAT(e, ::testing::Not(HasSubstr("sk_live_abcdefghijklmnop")));
    }
    EXPECT_THAT(errors("  - {id: a, workflowId: wf, source: schedule, schedule: {cron: '* * * * *'},"
                       " provider: github}\n"),
                ::testing::Contains(HasSubstr("provider: only for source: webhook")));
}

} // namespace
} // namespace wopbridge
