// The SDK's Boost.JSON settings getters (wopbridge/json_config.hpp): what each accepts, what it
// refuses and with which one-line reason, and that no reason carries a value.
#include <wopbridge/json_config.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge::json_config {
namespace {

std::string refusal(std::string_view text, std::string_view key) {
    std::string error;
    const auto st = status_of_reading(error, [&] {
        const auto o = parse_object(text, "settings", syntax_wording::must_be_object);
        (void)get_rotating_secrets(o, "secret", key);
    });
    return st == status::ok ? std::string("ok") : error;
}

TEST(JsonConfigTest, BlankTextReadsAsTheEmptyObject) {
    EXPECT_TRUE(parse_object("", "settings").empty());
    EXPECT_TRUE(parse_object(" \r\n\t", "settings").empty());
    EXPECT_THROW(parse_object("[1]", "settings"), config_error);
    try {
        parse_object("not json", "config");
        ADD_FAILURE() << "no refusal";
    } catch (const config_error& e) {
        EXPECT_STREQ(e.what(), "config is not valid JSON");
    }
    try {
        parse_object("not json", "settings", syntax_wording::must_be_object);
        ADD_FAILURE() << "no refusal";
    } catch (const config_error& e) {
        EXPECT_STREQ(e.what(), "settings must be a JSON object");
    }
}

TEST(JsonConfigTest, StringListsAreNonEmptyArraysOfNonEmptyStrings) {
    const auto o = parse_object(R"({"a":["x","y"],"b":[],"c":["x",""],"d":"x","e":[1]})", "s");
    EXPECT_EQ(get_string_list(o, "a"), (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(get_string_list(o, "absent"), std::nullopt);
    EXPECT_THROW(get_string_list(o, "b"), config_error);
    EXPECT_THROW(get_string_list(o, "c"), config_error);
    EXPECT_THROW(get_string_list(o, "d"), config_error);
    EXPECT_THROW(get_string_list(o, "e"), config_error);
}

TEST(JsonConfigTest, RotatingSecretsPutTheSingleOneFirst) {
    const auto both = parse_object(R"({"secret":"s1","secrets":["s2","s3"]})", "s");
    EXPECT_EQ(get_rotating_secrets(both, "secret", "secrets"),
              (std::vector<std::string>{"s1", "s2", "s3"}));
    const auto one = parse_object(R"({"secret":"s1"})", "s");
    EXPECT_EQ(get_rotating_secrets(one, "secret", "secrets"), (std::vector<std::string>{"s1"}));
    EXPECT_EQ(get_rotating_secrets(parse_object("{}", "s"), "secret", "secrets"), std::nullopt);
}

TEST(JsonConfigTest, RefusalsNameTheKeyAndNeverTheValue) {
    EXPECT_EQ(refusal(R"({"secret":"hunter2","secrets":"hunter3"})", "secrets"),
              "secrets must be a non-empty array of strings");
    EXPECT_EQ(refusal(R"({"secrets":["hunter2",""]})", "secrets"),
              "secrets must contain only non-empty strings");
    EXPECT_EQ(refusal(R"({"secret":""})", "secrets"), "secret must be a non-empty string");
    EXPECT_EQ(refusal(R"({"secret":"hunter2"})", "secrets"), "ok");
    std::string error;
    EXPECT_EQ(status_of_reading(error,
                                [] {
                                    check_keys(parse_object(R"({"bogus":"hunter2"})", "s"), {"a"},
                                               "settings");
                                }),
              status::invalid);
    EXPECT_EQ(error, "unknown settings key bogus");
}

} // namespace
} // namespace wopbridge::json_config
