#include "wopbridge/settings_reader.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

namespace wopbridge::settings {
namespace {

enum class colour { red, blue };

struct sample {
    std::string name;
    std::optional<std::string> secret;
    std::int64_t wait_ms = 100;
    std::size_t batch = 4;
    bool flag = false;
    colour paint = colour::red;
};

reader bind(sample& s) {
    reader in("settings");
    in.text("name", s.name, [](std::string_view v) { return printable_name(v, 8); })
        .text("secret", s.secret, 5)
        .integer("waitMs", 10, 1000, s.wait_ms)
        .integer("batch", 1, 16, s.batch)
        .boolean("flag", s.flag)
        .choice("paint", s.paint, {{"red", colour::red}, {"blue", colour::blue}});
    return in;
}

TEST(SettingsReaderTest, ReadsEveryBoundKind) {
    sample s;
    std::string error;
    ASSERT_TRUE(bind(s).read(
        R"({"name":"n1","secret":"pw","waitMs":20,"batch":16,"flag":true,"paint":"blue"})", error))
        << error;
    EXPECT_EQ(s.name, "n1");
    EXPECT_EQ(s.secret, "pw");
    EXPECT_EQ(s.wait_ms, 20);
    EXPECT_EQ(s.batch, 16u);
    EXPECT_TRUE(s.flag);
    EXPECT_EQ(s.paint, colour::blue);
}

TEST(SettingsReaderTest, EmptyTextIsTheEmptyObjectAndKeepsDefaults) {
    sample s;
    std::string error;
    ASSERT_TRUE(bind(s).read("", error));
    EXPECT_EQ(s.wait_ms, 100);
    EXPECT_FALSE(s.secret);
    EXPECT_EQ(s.paint, colour::red);
}

TEST(SettingsReaderTest, RefusesUnknownAndInvalidKeysWithoutTheirValue) {
    for (const char* text : {R"({"nope":1})", R"({"waitMs":9})", R"({"waitMs":1001})",
                             R"({"waitMs":1.5})", R"({"waitMs":"20"})", R"({"secret":"toolong"})",
                             R"({"secret":""})", R"({"name":"has space"})", R"({"flag":1})",
                             R"({"paint":"green"})"}) {
        sample s;
        std::string error;
        EXPECT_FALSE(bind(s).read(text, error)) << text;
        const auto key = std::string(text).substr(2, std::string(text).find('"', 2) - 2);
        EXPECT_EQ(error, "settings: invalid or unknown key '" + key + "'") << text;
        EXPECT_EQ(error.find("toolong"), std::string::npos);
    }
}

TEST(SettingsReaderTest, FirstRefusedKeyInSortedOrderWins) {
    sample s;
    std::string error;
    EXPECT_FALSE(bind(s).read(R"({"zzz":1,"batch":0})", error));
    EXPECT_EQ(error, "settings: invalid or unknown key 'batch'");
}

TEST(SettingsReaderTest, MalformedJsonIsPrefixedWithTheContext) {
    reader in("subscription settings");
    std::string error;
    EXPECT_FALSE(in.read(R"({"a":[1]})", error));
    EXPECT_TRUE(error.starts_with("subscription settings: ")) << error;
    EXPECT_GT(error.size(), std::string("subscription settings: ").size());
}

TEST(SettingsReaderTest, CustomRuleGivesItsOwnReasonOrTheGenericOne) {
    std::string url;
    reader in("settings");
    in.custom("url", [&](const json::flat_value& v, std::string& reason) {
        if (v.text == "generic") {
            return false;
        }
        if (v.text != "ok") {
            reason = in.message("url must be ok");
            return false;
        }
        url = v.text;
        return true;
    });
    std::string error;
    EXPECT_FALSE(in.read(R"({"url":"bad"})", error));
    EXPECT_EQ(error, "settings: url must be ok");
    EXPECT_FALSE(in.read(R"({"url":"generic"})", error));
    EXPECT_EQ(error, "settings: invalid or unknown key 'url'");
    EXPECT_TRUE(in.read(R"({"url":"ok"})", error));
    EXPECT_EQ(url, "ok");
}

TEST(SettingsReaderTest, IntegerInChecksBoundsAndShape) {
    const auto number = [](std::string text) {
        return json::flat_value{json::flat_value::kind::number, std::move(text)};
    };
    EXPECT_EQ(integer_in(number("-1"), -1, 5), -1);
    EXPECT_EQ(integer_in(number("5"), -1, 5), 5);
    EXPECT_FALSE(integer_in(number("6"), -1, 5));
    EXPECT_FALSE(integer_in(number("1e2"), 0, 1000));
    EXPECT_FALSE(integer_in(number("99999999999999999999"), 0, 1000));
    EXPECT_FALSE(integer_in(json::flat_value{json::flat_value::kind::string, "3"}, 0, 5));
}

TEST(SettingsReaderTest, PrintableNameRefusesSpacesControlsAndLength) {
    EXPECT_TRUE(printable_name("a-b.c~!"));
    EXPECT_FALSE(printable_name(""));
    EXPECT_FALSE(printable_name("a b"));
    EXPECT_FALSE(printable_name("a\x7f"));
    EXPECT_FALSE(printable_name("caf\xc3\xa9"));
    EXPECT_TRUE(printable_name(std::string(200, 'x')));
    EXPECT_FALSE(printable_name(std::string(201, 'x')));
    EXPECT_TRUE(printable_name(std::string(255, 'x'), 255));
}

TEST(SettingsReaderTest, HostPidNameIsPrefixedUniqueAndSanitised) {
    const auto pid = "-" + std::to_string(::getpid());
    const auto name = host_pid_name("wopbridge-", "host");
    EXPECT_TRUE(name.starts_with("wopbridge-"));
    EXPECT_TRUE(name.ends_with(pid));
    EXPECT_TRUE(printable_name(name, 1000));
    const auto digits_only = host_pid_name("p:", "h", [](char c) { return c >= '0' && c <= '9'; });
    EXPECT_TRUE(digits_only.starts_with("__"));
    EXPECT_TRUE(digits_only.ends_with("_" + std::to_string(::getpid())));
}

TEST(SettingsReaderTest, EveryListedTrimsItemsAndChecksEach) {
    const auto short_item = [](std::string_view item) { return !item.empty() && item.size() <= 3; };
    EXPECT_TRUE(every_listed("a", 10, short_item));
    EXPECT_TRUE(every_listed("a, bb ,ccc", 10, short_item));
    EXPECT_FALSE(every_listed("a,,b", 10, short_item));
    EXPECT_FALSE(every_listed("a,dddd", 10, short_item));
    EXPECT_FALSE(every_listed("a,", 10, short_item));
    EXPECT_FALSE(every_listed("", 10, short_item));
    EXPECT_FALSE(every_listed("a,b,c,d,e,f", 10, short_item));
}

TEST(SettingsReaderTest, TextWithRefusalSpellsOutTheExpectedShape) {
    std::string url;
    reader in("settings");
    in.text("url", url, [](std::string_view v) { return v.starts_with("x://"); },
            "url must be x://...");
    std::string error;
    EXPECT_FALSE(in.read(R"({"url":"y://secret"})", error));
    EXPECT_EQ(error, "settings: url must be x://...");
    EXPECT_FALSE(in.read(R"({"url":1})", error));
    EXPECT_EQ(error, "settings: invalid or unknown key 'url'");
    EXPECT_TRUE(in.read(R"({"url":"x://a"})", error));
    EXPECT_EQ(url, "x://a");
}

} // namespace
} // namespace wopbridge::settings
