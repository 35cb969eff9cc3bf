// Connector secrets sealed at rest, through the real `wopbridge serve` on SQLite and PostgreSQL:
// canary forms token secrets and Slack signing-secret overrides, from the config file and from
// POST /v1/trigger-subscriptions, never appear in the database, the serve log (trace level), any
// REST read, the CLI, error answers or run events; a row stored in clear before (planted through
// the store, as an earlier version wrote it) is sealed by the next start; and the modules still get
// the plain values: a form token issued before a restart verifies after it, the override still
// verifies Slack requests, and the planted row's token works.
#include "store/store.hpp"
#include "support/build_paths.hpp"
#include "support/child_process.hpp"
#include "support/eventually.hpp"
#include "support/http_client.hpp"
#include "support/postgres_server.hpp"
#include "support/provider_signing.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace wopbridge::testing::connector_secret_canary_test {
namespace {

namespace json = boost::json;

constexpr const char* api_key = "hk_secrets";
constexpr const char* origin = "https://forms.example.test";
constexpr const char* config_token = "CANARYCONFIGFORMTOKEN01";
constexpr const char* config_slack = "CANARYCONFIGSLACKOVERRIDE2";
constexpr const char* rest_token = "CANARYRESTFORMTOKEN0003";
constexpr const char* rest_slack = "CANARYRESTSLACKOVERRIDE4";
constexpr const char* planted_token = "CANARYPLANTEDCLEARTOKEN5";
constexpr const char* instance_slack = "CANARYINSTANCESLACK6"; // connector level: never stored

// The parameter names the backend: "sqlite" or "postgres".

class ConnectorSecretCanaryTest : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        std::string store_line = "store: {sqlite: {path: bridge.db}}\n";
        if (postgres()) {
            pg_ = postgres_server::shared();
            if (pg_ == nullptr) {
                GTEST_SKIP() << "PostgreSQL unavailable: "
                             << postgres_server::shared_unavailable_reason();
            }
            db_ = pg_->create_database();
            ASSERT_FALSE(db_.empty());
            store_line = "store: {postgres: {url: \"" + pg_->url(db_) + "\"}}\n";
        }
        std::ofstream(dir_.file("wopbridge.yaml"))
            << "server: {listen: \"127.0.0.1:0\"}\n"
               "auth:\n"
               "  apiKeys:\n"
               "    - {key: "
            << api_key << ", tenant: default, scopes: [webhooks:manage, runs:read]}\n"
            << store_line
            << "hostKeyFile: host.key\n"
               "logging: {level: trace}\n"
               "runs: {local: {workflows: [{id: conformance-noop}]}}\n"
               "connectors:\n"
               "  - {name: forms, module: forms}\n"
               "  - {name: chat, module: slack, settings: {signingSecret: "
            << instance_slack
            << "}}\n"
               "subscriptions:\n"
               "  - {id: contact, source: form, connector: forms, workflowId: conformance-noop,\n"
               "     settings: {allowedOrigins: [\""
            << origin << "\"], tokenSecret: " << config_token
            << "}}\n"
               "  - {id: chat-a, connector: chat, workflowId: conformance-noop,\n"
               "     settings: {signingSecret: "
            << config_slack << "}}\n";
    }

    void TearDown() override { stop(); }

    bool postgres() const { return GetParam() == "postgres"; }

    void start() {
        serve_ = std::make_unique<serve_process>();
        ASSERT_TRUE(serve_->start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_->error;
    }

    void stop() {
        if (serve_ && serve_->pid() > 0) {
            serve_->signal(SIGTERM);
            EXPECT_EQ(serve_->wait_exit(), 0);
        }
        serve_.reset();
    }

    http_reply call(const std::string& method, const std::string& path,
                    const std::string& body = "") {
        http_call c;
        c.method = method;
        c.url = serve_->url() + path;
        c.headers = {{"authorization", std::string("Bearer ") + api_key},
                     {"content-type", "application/json"}};
        c.body = body;
        return keep(method + " " + path, perform(c));
    }

    http_reply keep(const std::string& what, http_reply r) {
        std::string text = std::to_string(r.status) + "\n";
        for (const auto& [k, v] : r.headers) {
            text += k + ": " + v + "\n";
        }
        outputs_.push_back({what, text + r.body});
        return r;
    }

    std::string register_sub(const std::string& connector, const std::string& source,
                             const std::string& settings) {
        auto r = call("POST", "/v1/trigger-subscriptions",
                      R"({"source":")" + source +
                          R"(","workflowId":"conformance-noop","verification":{"mode":"none"},)"
                          R"("connector":")" +
                          connector + R"(","settings":)" + settings + "}");
        EXPECT_EQ(r.status, 201) << r.body;
        return r.status == 201 ? std::string(json::parse(r.body)
                                                  .at("subscription")
                                                  .at("subscriptionId")
                                                  .as_string())
                               : std::string();
    }

    std::string form_token(const std::string& sub) {
        http_call c;
        c.url = serve_->url() + "/v1/ingest/" + sub + "/token";
        c.headers = {{"origin", origin}};
        auto r = keep("token " + sub, perform(c));
        EXPECT_EQ(r.status, 200) << sub << ": " << r.body;
        boost::system::error_code ec;
        auto v = json::parse(r.body, ec);
        return !ec && v.is_object() ? std::string(v.at("token").as_string()) : std::string();
    }

    int post_form(const std::string& sub, const std::string& token, const std::string& note) {
        http_call c;
        c.method = "POST";
        c.url = serve_->url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", "application/x-www-form-urlencoded"},
                     {"origin", origin},
                     {"accept", "application/json"}};
        c.body = form_encode({{"_token", token}, {"note", note}});
        auto r = keep("form " + sub, perform(c));
        if (r.status == 202) {
            run_ids_.emplace_back(json::parse(r.body).at("runId").as_string());
        }
        return r.status;
    }

    int post_slack(const std::string& sub, const std::string& secret, const std::string& id) {
        const std::string body =
            R"({"type":"event_callback","event_id":")" + id +
            R"(","event":{"type":"app_mention","channel":"C1","text":"hi","ts":"1.1"}})";
        const auto ts = static_cast<std::int64_t>(std::time(nullptr));
        http_call c;
        c.method = "POST";
        c.url = serve_->url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", "application/json"},
                     {"x-slack-request-timestamp", std::to_string(ts)},
                     {"x-slack-signature", slack_signature(secret, ts, body)}};
        c.body = body;
        return keep("slack " + sub, perform(c)).status;
    }

    // Every read a client has: REST, the dashboard's list, /metrics, the CLI, run events.
    void read_everything() {
        auto list = call("GET", "/v1/trigger-subscriptions");
        ASSERT_EQ(list.status, 200);
        const auto listed = json::parse(list.body);
        for (const auto& s : listed.at("subscriptions").as_array()) {
            const std::string id(s.at("subscriptionId").as_string());
            call("GET", "/v1/trigger-subscriptions/" + id);
            call("GET", "/v1/trigger-subscriptions/" + id + "/deliveries");
            call("GET", "/v1/trigger-subscriptions/" + id + "/dead-letters");
        }
        call("GET", "/v1/ops/subscriptions");
        call("GET", "/metrics");
        call("GET", "/.well-known/openwop");
        for (const auto& run : run_ids_) {
            ASSERT_TRUE(eventually([&] {
                return call("GET", "/v1/runs/" + run).body.find("\"completed\"") !=
                       std::string::npos;
            })) << run;
            call("GET", "/v1/runs/" + run + "/events/poll?timeout=0");
        }
        auto cli = run_program({WOPBRIDGE_PROGRAM, "subscriptions", "list", "--url", serve_->url(),
                                "--api-key", api_key},
                               30, {}, true);
        EXPECT_EQ(cli.exit_code, 0) << cli.stdout_text;
        outputs_.push_back({"wopbridge subscriptions list", cli.stdout_text});
    }

    // A row as a version that kept connector settings in clear wrote it.
    void plant_clear_row() {
        auto st = !postgres() ? open_sqlite_store(sqlite_options{dir_.file("bridge.db")})
                              : open_postgres_store(postgres_options{pg_->url(db_)});
        ASSERT_TRUE(st) << st.error().message;
        subscription s;
        s.id = "sub_from_before";
        s.tenant = "default";
        s.source = source_kind::form;
        s.workflow_id = "conformance-noop";
        s.verification = verification_mode::none;
        s.connector = "forms";
        s.connector_settings_json = std::string(R"({"allowedOrigins":[")") + origin +
                                    R"("],"tokenSecret":")" + planted_token + "\"}";
        s.origin = subscription::origin_kind::api;
        s.created_at = s.updated_at = 1767225600000;
        ASSERT_TRUE((*st)->insert_subscription(s));
    }

    // The stored bytes: every SQLite file, or PostgreSQL's subscriptions and event tables.
    std::string database() {
        std::string out;
        if (!postgres()) {
            for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
                if (e.path().filename().string().rfind("bridge.db", 0) == 0) {
                    out += read_text_file(e.path().string());
                }
            }
            return out;
        }
        for (const char* table : {"subscriptions", "subscription_events", "run_events"}) {
            std::string rows;
            EXPECT_TRUE(pg_->sql(db_, std::string("SELECT t::text FROM ") + table + " t", &rows))
                << table;
            out += rows;
        }
        return out;
    }

    // The write-ahead log as well: SQLite's -wal file is among database()'s files; PostgreSQL's
    // pg_wal segments (what archives and replicas get) are read here.
    std::string write_ahead_log() {
        if (!postgres()) {
            return database();
        }
        std::string out;
        for (const auto& e : std::filesystem::directory_iterator(pg_->data_dir() / "pg_wal")) {
            if (e.is_regular_file()) {
                out += read_text_file(e.path().string());
            }
        }
        return out;
    }

    struct output {
        std::string what;
        std::string text;
    };
    temp_dir dir_;
    postgres_server* pg_ = nullptr;
    std::string db_;
    std::unique_ptr<serve_process> serve_;
    std::vector<output> outputs_;
    std::vector<std::string> run_ids_;
};

TEST_P(ConnectorSecretCanaryTest, SecretsAreSealedAtRestShownNowhereAndStillVerify) {
    ASSERT_NO_FATAL_FAILURE(start());
    const std::string rest_form = register_sub(
        "forms", "form",
        std::string(R"({"allowedOrigins":[")") + origin + R"("],"tokenSecret":")" + rest_token +
            "\"}");
    const std::string rest_chat =
        register_sub("chat", "webhook", std::string(R"({"signingSecret":")") + rest_slack + "\"}");
    ASSERT_FALSE(rest_form.empty());
    ASSERT_FALSE(rest_chat.empty());
    // A reserved key is refused as the settings' fault, and nothing is stored.
    auto reserved = call("POST", "/v1/trigger-subscriptions",
                         R"({"source":"form","workflowId":"conformance-noop","connector":"forms",)"
                         R"("settings":{"allowedOrigins":["https://x.test"],)"
                         R"("tokenSecret":{"$sealed":"v1:AAAA"}}})");
    EXPECT_EQ(reserved.status, 400) << reserved.body;
    EXPECT_NE(reserved.body.find("\"settings\""), std::string::npos) << reserved.body;

    const std::string early_token = form_token("contact");
    ASSERT_FALSE(early_token.empty());
    EXPECT_EQ(post_form("contact", early_token, "one"), 202);
    EXPECT_EQ(post_form("contact", "1.2.3", "forged"), 403);
    EXPECT_EQ(post_form(rest_form, form_token(rest_form), "two"), 202);
    EXPECT_EQ(post_slack("chat-a", config_slack, "Ev1"), 200);
    EXPECT_EQ(post_slack("chat-a", instance_slack, "Ev2"), 401); // the override replaces it
    EXPECT_EQ(post_slack(rest_chat, rest_slack, "Ev3"), 200);
    read_everything();
    stop();

    ASSERT_NO_FATAL_FAILURE(plant_clear_row());
    ASSERT_NE(database().find(planted_token), std::string::npos) << "the planted row is clear";

    ASSERT_NO_FATAL_FAILURE(start());
    // Modules got the plain values back: the token issued before the restart verifies, so do the
    // overrides, and the row sealed at this start serves its token.
    EXPECT_EQ(post_form("contact", early_token, "three"), 202);
    EXPECT_EQ(post_form(rest_form, form_token(rest_form), "four"), 202);
    EXPECT_EQ(post_form("sub_from_before", form_token("sub_from_before"), "five"), 202);
    EXPECT_EQ(post_slack("chat-a", config_slack, "Ev4"), 200);
    EXPECT_EQ(post_slack(rest_chat, rest_slack, "Ev5"), 200);
    read_everything();
    stop();

    // The planted row was sealed by the second start; the third finds nothing left in clear.
    ASSERT_NO_FATAL_FAILURE(start());
    stop();
    const std::string log = read_text_file(dir_.file("serve.log")); // all three starts
    ASSERT_NE(log.find("wopbridge.started"), std::string::npos);
    const auto sealed_at = log.find("connector.settings_sealed");
    ASSERT_NE(sealed_at, std::string::npos);
    EXPECT_EQ(sealed_at, log.rfind("connector.settings_sealed"));
    EXPECT_NE(log.find("\"subscriptions\":1", sealed_at), std::string::npos);

    const std::string stored = database();
    ASSERT_FALSE(stored.empty());
    EXPECT_NE(stored.find("$sealed"), std::string::npos);
    for (const char* canary : {config_token, config_slack, rest_token, rest_slack, planted_token,
                               instance_slack}) {
        EXPECT_EQ(stored.find(canary), std::string::npos) << canary << " in the database";
        EXPECT_EQ(log.find(canary), std::string::npos) << canary << " in the serve log";
        for (const auto& o : outputs_) {
            EXPECT_EQ(o.text.find(canary), std::string::npos) << canary << " in " << o.what;
        }
    }
    EXPECT_GE(outputs_.size(), 30u);
}

TEST_P(ConnectorSecretCanaryTest, ARefusedRegistrationWritesNothingNotEvenToTheLog) {
    ASSERT_NO_FATAL_FAILURE(start());
    // Unique per run: the PostgreSQL server (and its WAL) is shared by the binary's tests.
    const std::string tag = postgres() ? db_ : std::string("sqlite");
    const std::string refused = "CANARYREFUSEDVALUE" + tag;
    const std::string control = "CANARYACCEPTEDVALUE" + tag;
    // The module refuses the misspelt key, whose value no schema marks secret: it must reach
    // neither the store nor its log.
    auto r = call("POST", "/v1/trigger-subscriptions",
                  R"({"source":"form","workflowId":"conformance-noop","connector":"forms",)"
                  R"("settings":{"allowedOrigins":["https://x.test"],"tokenSecrett":")" +
                      refused + R"("}})");
    EXPECT_EQ(r.status, 400) << r.body;
    // The control: an accepted registration's plain value is found where the search looks.
    EXPECT_FALSE(register_sub("forms", "form",
                              R"({"allowedOrigins":["https://x.test"],"successUrl":"https://x.test/)" +
                                  control + R"("})")
                     .empty());
    const std::string wal = write_ahead_log(); // while serving: SQLite's -wal is not yet folded in
    stop();
    EXPECT_NE(wal.find(control), std::string::npos) << "the search cannot see the log";
    EXPECT_EQ(wal.find(refused), std::string::npos) << "a refused value in the write-ahead log";
    EXPECT_EQ(database().find(refused), std::string::npos) << "a refused value in the database";
    EXPECT_EQ(read_text_file(dir_.file("serve.log")).find(refused), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConnectorSecretCanaryTest,
                         ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

} // namespace
} // namespace wopbridge::testing::connector_secret_canary_test
