// Secret connector settings: which fields a module's schema marks, sealing them for the store and
// opening them again for the module, the reserved "$sealed" key, and the channel connectors' marks.
#include "plugins/module_loader.hpp"
#include "plugins/secret_settings.hpp"
#include "support/build_paths.hpp"
#include "support/fake_clock.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace wopbridge {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class SecretSettingsTest : public ::testing::Test {
  protected:
    secret_box box_ = *secret_box::from_key(std::string(secret_box::key_size, 'k'));
    testing::seeded_random random_;
};

TEST_F(SecretSettingsTest, FindsMarkedFieldsAtEveryDepthOfTheSchema) {
    const auto fields = secret_fields::from_schema_text(R"({
      "type": "object",
      "$defs": {"key": {"type": "string", "writeOnly": true}},
      "properties": {
        "token": {"type": "string", "writeOnly": true},
        "plain": {"type": "string", "writeOnly": false},
        "vendorMarked": {"type": "string", "x-secret": true},
        "auth": {"type": "object", "properties": {"user": {"type": "string"},
                                                  "password": {"$ref": "#/$defs/key"}}},
        "keys": {"type": "array", "items": {"type": "object",
                 "properties": {"id": {"type": "string"}, "value": {"writeOnly": true}}}},
        "perChannel": {"type": "object", "additionalProperties": {"writeOnly": true}}
      },
      "allOf": [{"properties": {"extra": {"writeOnly": true}}}]
    })");
    EXPECT_THAT(fields.pointers(),
                ElementsAre("/auth/password", "/extra", "/keys/[]/value", "/perChannel/*",
                            "/token", "/vendorMarked"));
}

TEST_F(SecretSettingsTest, AHostileSchemaMarksNothingAndEnds) {
    EXPECT_TRUE(secret_fields::from_schema_text("not json").empty());
    EXPECT_TRUE(secret_fields::from_schema_text("true").empty());
    const auto looping = secret_fields::from_schema_text(
        R"({"$ref": "#", "properties": {"a": {"$ref": "#"}, "s": {"writeOnly": true}}})");
    EXPECT_THAT(looping.pointers(), ::testing::Contains("/s"));
    EXPECT_LE(looping.paths().size(), 256u);
}

TEST_F(SecretSettingsTest, SealsOnlyTheMarkedValuesAndOpensThemToTheSameSettings) {
    const auto fields = secret_fields::from_schema_text(
        R"({"properties": {"tokenSecret": {"writeOnly": true},
                           "signingSecrets": {"type": "array", "writeOnly": true},
                           "auth": {"properties": {"password": {"writeOnly": true}}}}})");
    const std::string plain =
        R"({"allowedOrigins":["https://a.example"],"tokenSecret":"CANARYTOKENSECRET0001",)"
        R"("signingSecrets":["CANARYONE","CANARYTWO"],"auth":{"user":"u","password":"CANARYPW"}})";
    auto sealed = seal_secret_settings(plain, fields, box_, random_, seal_mode::intake);
    ASSERT_TRUE(sealed);
    EXPECT_TRUE(sealed->changed);
    EXPECT_THAT(sealed->json, Not(HasSubstr("CANARY")));
    EXPECT_THAT(sealed->json, HasSubstr("https://a.example")); // not a secret: kept readable
    const auto doc = json::parse(sealed->json);
    EXPECT_TRUE(doc.at("tokenSecret").at("$sealed").as_string().starts_with("v1:"));
    EXPECT_TRUE(doc.at("auth").at("password").at("$sealed").is_string());
    EXPECT_EQ(doc.at("auth").at("user"), "u");
    EXPECT_TRUE(holds_sealed_values(sealed->json));
    EXPECT_FALSE(holds_sealed_values(plain));

    auto opened = unseal_secret_settings(sealed->json, box_);
    ASSERT_TRUE(opened);
    EXPECT_EQ(json::parse(*opened), json::parse(plain));
}

TEST_F(SecretSettingsTest, TheReservedKeyIsRefusedAtIntakeWhereverItIs) {
    const auto fields =
        secret_fields::from_schema_text(R"({"properties":{"s":{"writeOnly":true}}})");
    for (const char* settings : {R"({"s":{"$sealed":"v1:AAAA"}})",
                                 R"({"successUrl":{"$sealed":"v1:AAAA"}})",
                                 R"({"list":[{"deep":{"$sealed":"x","other":1}}]})"}) {
        auto r = seal_secret_settings(settings, fields, box_, random_, seal_mode::intake);
        ASSERT_FALSE(r) << settings;
        EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument));
    }
    EXPECT_FALSE(seal_secret_settings("[1]", fields, box_, random_, seal_mode::intake));
    EXPECT_FALSE(seal_secret_settings("{", fields, box_, random_, seal_mode::intake));
}

TEST_F(SecretSettingsTest, KeepSealedSealsClearValuesOnceAndThenChangesNothing) {
    const auto fields =
        secret_fields::from_schema_text(R"({"properties":{"a":{"writeOnly":true},
                                                          "b":{"writeOnly":true}}})");
    auto half = seal_secret_settings(R"({"a":"first-secret"})", fields, box_, random_,
                                     seal_mode::intake);
    ASSERT_TRUE(half);
    auto row = json::parse(half->json).as_object();
    row["b"] = "second-secret"; // a clear value beside a sealed one (a row from before)
    const std::string stored = json::serialize(row);

    auto first = seal_secret_settings(stored, fields, box_, random_, seal_mode::keep_sealed);
    ASSERT_TRUE(first);
    EXPECT_TRUE(first->changed);
    EXPECT_THAT(first->json, Not(HasSubstr("second-secret")));
    EXPECT_EQ(json::parse(first->json).at("a"), json::parse(half->json).at("a"));
    auto again = seal_secret_settings(first->json, fields, box_, random_, seal_mode::keep_sealed);
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->changed);
    EXPECT_EQ(again->json, first->json);
    EXPECT_EQ(json::parse(*unseal_secret_settings(again->json, box_)),
              json::parse(R"({"a":"first-secret","b":"second-secret"})"));
}

TEST_F(SecretSettingsTest, AValueSealedUnderAnotherKeyIsNotOpened) {
    const auto fields =
        secret_fields::from_schema_text(R"({"properties":{"s":{"writeOnly":true}}})");
    auto sealed = seal_secret_settings(R"({"s":"x-secret-value"})", fields, box_, random_,
                                       seal_mode::intake);
    ASSERT_TRUE(sealed);
    auto other = *secret_box::from_key(std::string(secret_box::key_size, 'o'));
    auto r = unseal_secret_settings(sealed->json, other);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument));
}

TEST_F(SecretSettingsTest, SettingsOfAnUnknownSchemaAreSealedWhole) {
    auto sealed = seal_secret_settings(R"({"x":"one-value","y":{"z":"two-value"}})",
                                       secret_fields::every_setting(), box_, random_,
                                       seal_mode::intake);
    ASSERT_TRUE(sealed);
    EXPECT_THAT(sealed->json, Not(HasSubstr("-value")));
    EXPECT_EQ(json::parse(*unseal_secret_settings(sealed->json, box_)),
              json::parse(R"({"x":"one-value","y":{"z":"two-value"}})"));
}

TEST_F(SecretSettingsTest, RedactsTheSecretValuesOfPlainSettings) {
    const auto fields = secret_fields::from_schema_text(
        R"({"properties":{"s":{"writeOnly":true},"list":{"writeOnly":true}}})");
    const auto values = secret_values(R"({"s":"hunter22","list":["alpha1","beta2"],"n":"open"})",
                                      fields);
    EXPECT_THAT(values, ElementsAre("hunter22", "alpha1", "beta2"));
    EXPECT_EQ(redact_values("bad secret hunter22 (alpha1, open)", values),
              "bad secret [redacted] ([redacted], open)");
}

// The mark is where the secrets are: every channel connector's schemas name theirs.
TEST_F(SecretSettingsTest, TheChannelConnectorsMarkTheirSecrets) {
    struct expected {
        const char* module;
        std::vector<std::string> config;
        std::vector<std::string> subscription;
    };
    const std::vector<expected> cases = {
        {"forms", {}, {"/tokenSecret"}},
        {"slack", {"/signingSecret", "/signingSecrets"}, {"/signingSecret", "/signingSecrets"}},
        {"sms", {"/authToken", "/authTokens"}, {"/authToken", "/authTokens"}},
        {"email", {"/auth/password", "/webhookSigningKey"}, {}},
        {"queue", {"/url"}, {}},
        {"hello", {}, {"/secret"}},
    };
    for (const auto& c : cases) {
        auto m = load_module(c.module, {WOPBRIDGE_MODULE_DIR});
        ASSERT_TRUE(m) << c.module << ": " << m.error().message;
        EXPECT_EQ(secret_fields::from_schema_text(m->config_schema_json).pointers(), c.config)
            << c.module;
        EXPECT_EQ(secret_fields::from_schema_text(m->subscription_schema_json).pointers(),
                  c.subscription)
            << c.module;
    }
}

} // namespace
} // namespace wopbridge
