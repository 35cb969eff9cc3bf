// The connector host and secret settings: it seals what a module's schema marks secret for the
// store, opens it again before the schema check and the module see it (the module gets plain
// values), refuses what its key cannot open, and redacts secrets from the reasons a module writes.
#include "plugins/connector_host.hpp"
#include "support/build_paths.hpp"
#include "support/fake_clock.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>

namespace wopbridge {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* token = "CANARYHOSTTOKEN42";
constexpr const char* nested_key = "CANARYNESTEDKEY77";

class null_sink final : public submit_sink {
  public:
    void submit(const inbound_submission&, submit_callback done) override {
        submit_result r;
        r.status = submit_status::invalid;
        done(std::move(r));
    }
    bool has_capacity() const override { return true; }
};

class ConnectorHostSecretsTest : public ::testing::Test {
  protected:
    ConnectorHostSecretsTest() { make_host(&box_); }

    void make_host(const secret_box* box) {
        host_.reset();
        connector_host_options o;
        o.module_dirs = {WOPBRIDGE_TEST_MODULE_DIR};
        o.box = box;
        o.log_sink = [this](const std::string& line) {
            std::lock_guard lk(mu_);
            lines_.push_back(std::string(json::parse(line).at("msg").as_string()));
        };
        host_ = std::make_unique<connector_host>(o, sink_, clock_, random_);
    }

    void add_quotes(const std::string& settings = "{}") {
        auto r = host_->add_instance({"quotes", "quotes_settings", settings});
        ASSERT_TRUE(r) << r.error().message;
    }

    static subscription sub(const std::string& id, const std::string& settings) {
        subscription s;
        s.id = id;
        s.connector = "quotes";
        s.workflow_id = "wf-1";
        s.connector_settings_json = settings;
        return s;
    }

    std::string seal(const std::string& plain, const std::string& connector = "quotes") {
        auto r = host_->seal_settings(connector, plain, seal_mode::intake);
        EXPECT_TRUE(r) << r.error().message;
        return r ? r->json : std::string();
    }

    // What the module was handed, in order ("settings {...}" lines it logs).
    std::vector<json::value> received() {
        std::lock_guard lk(mu_);
        std::vector<json::value> out;
        for (const auto& l : lines_) {
            if (l.rfind("settings ", 0) == 0) {
                out.push_back(json::parse(l.substr(9)));
            }
        }
        return out;
    }

    secret_box box_ = *secret_box::from_key(std::string(secret_box::key_size, 'h'));
    null_sink sink_;
    testing::fake_clock clock_;
    testing::seeded_random random_;
    std::mutex mu_;
    std::vector<std::string> lines_;
    std::unique_ptr<connector_host> host_;
};

TEST_F(ConnectorHostSecretsTest, MarkedSettingsAreSealedForTheStoreAndReachTheModulePlain) {
    add_quotes();
    const std::string plain = std::string(R"({"token":")") + token + R"(","nested":{"key":")" +
                              nested_key + R"("},"label":"readable"})";
    const std::string stored = seal(plain);
    EXPECT_THAT(stored, Not(HasSubstr("CANARY")));
    EXPECT_THAT(stored, HasSubstr("readable"));
    EXPECT_THAT(stored, HasSubstr(R"("token":{"$sealed":"v1:)"));
    EXPECT_THAT(stored, HasSubstr(R"("key":{"$sealed":"v1:)"));

    ASSERT_TRUE(host_->subscribe(sub("sub-1", stored)));
    auto got = received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], json::parse(plain));
}

TEST_F(ConnectorHostSecretsTest, TheSameSettingsSealedAgainDoNotCallTheModuleAgain) {
    add_quotes();
    const std::string plain = std::string(R"({"token":")") + token + "\"}";
    const std::string first = seal(plain);
    const std::string second = seal(plain);
    ASSERT_NE(first, second); // a fresh nonce each time
    ASSERT_TRUE(host_->subscribe(sub("sub-1", first)));
    ASSERT_TRUE(host_->subscribe(sub("sub-1", second)));
    ASSERT_TRUE(host_->subscribe(sub("sub-1", second)));
    EXPECT_EQ(received().size(), 1u);
    ASSERT_TRUE(host_->subscribe(sub("sub-1", seal(R"({"token":"another-token-1"})"))));
    EXPECT_EQ(received().size(), 2u); // changed settings are an update
}

TEST_F(ConnectorHostSecretsTest, TheSchemaIsCheckedOnThePlainValues) {
    add_quotes();
    // Sealed, "short" is a long string; the schema's minLength must still see five characters.
    auto r = host_->subscribe(sub("sub-1", seal(R"({"token":"short"})")));
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("/token"));
    EXPECT_THAT(r.error().message, Not(HasSubstr("short")));
    EXPECT_TRUE(received().empty());
}

TEST_F(ConnectorHostSecretsTest, SettingsOfAConnectorNotLoadedHereAreSealedWhole) {
    add_quotes();
    const std::string stored = seal(R"({"label":"CANARYLABEL"})", "elsewhere");
    EXPECT_THAT(stored, Not(HasSubstr("CANARYLABEL")));
    ASSERT_TRUE(host_->subscribe(sub("sub-1", stored)));
    ASSERT_EQ(received().size(), 1u);
    EXPECT_EQ(received()[0], json::parse(R"({"label":"CANARYLABEL"})"));
}

TEST_F(ConnectorHostSecretsTest, TheReservedKeyIsRefusedAsNewSettings) {
    add_quotes();
    auto r = host_->seal_settings("quotes", R"({"label":{"$sealed":"v1:AAAA"}})", seal_mode::intake);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, errc::invalid_argument);
    EXPECT_THAT(r.error().message, HasSubstr("$sealed"));
}

TEST_F(ConnectorHostSecretsTest, ASealedValueItsKeyCannotOpenNeverReachesTheModule) {
    add_quotes();
    auto other = *secret_box::from_key(std::string(secret_box::key_size, 'o'));
    connector_host_options o;
    o.module_dirs = {WOPBRIDGE_TEST_MODULE_DIR};
    o.box = &other;
    null_sink sink;
    connector_host sealer(o, sink, clock_, random_);
    ASSERT_TRUE(sealer.add_instance({"quotes", "quotes_settings", "{}"}));
    auto foreign = sealer.seal_settings("quotes", std::string(R"({"token":")") + token + "\"}",
                                        seal_mode::intake);
    ASSERT_TRUE(foreign);

    auto r = host_->subscribe(sub("sub-1", foreign->json));
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("cannot open"));
    EXPECT_TRUE(received().empty());
}

TEST_F(ConnectorHostSecretsTest, WithoutAKeyNothingIsSealedOrOpened) {
    const std::string stored = seal(std::string(R"({"token":")") + token + "\"}");
    make_host(nullptr);
    add_quotes();
    auto s = host_->seal_settings("quotes", R"({"token":"x"})", seal_mode::intake);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, errc::unsupported);
    EXPECT_FALSE(host_->subscribe(sub("sub-1", stored)));
    EXPECT_TRUE(host_->subscribe(sub("sub-2", R"({"label":"clear"})")));
}

TEST_F(ConnectorHostSecretsTest, AModulesReasonsNeverQuoteASecret) {
    auto config = host_->add_instance(
        {"quotes", "quotes_settings", R"({"apiKey":"CANARYAPIKEY99","reject":true})"});
    ASSERT_FALSE(config);
    EXPECT_THAT(config.error().message, HasSubstr("rejected"));
    EXPECT_THAT(config.error().message, Not(HasSubstr("CANARYAPIKEY99")));

    add_quotes();
    auto r = host_->subscribe(
        sub("sub-1", seal(std::string(R"({"token":")") + token + R"(","refuse":true})")));
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("refused"));
    EXPECT_THAT(r.error().message, HasSubstr("[redacted]"));
    EXPECT_THAT(r.error().message, Not(HasSubstr(token)));
    EXPECT_THAT(r.error().message, Not(HasSubstr("$sealed")));
}

} // namespace
} // namespace wopbridge
