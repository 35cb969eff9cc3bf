// Where the config file wrote each connector setting, keyed by the JSON Pointer the schema
// validator reports: what a schema refusal at check-config / serve points at.
#include "config/config.hpp"

#include <gtest/gtest.h>

#include <string>

namespace wopbridge {
namespace {

std::optional<std::string> no_env(const std::string&) {
    return std::nullopt;
}

config parsed(const std::string& yaml) {
    auto r = parse_config(yaml, "wopbridge.yaml", "/tmp", no_env);
    EXPECT_TRUE(r.errors.empty()) << r.errors.front().to_string();
    return r.value.value_or(config{});
}

void expect_at(const settings_positions& at, const std::string& pointer, int line, int column,
               bool key = false) {
    auto it = at.find(pointer);
    ASSERT_NE(it, at.end()) << "no position for '" << pointer << "'";
    const source_position& p = key ? it->second.key : it->second.value;
    EXPECT_EQ(p.line, line) << pointer << (key ? " (key)" : "");
    EXPECT_EQ(p.column, column) << pointer << (key ? " (key)" : "");
}

TEST(SettingsPositionsTest, EachValueAndKeyIsWhereTheFileWroteIt) {
    const config c = parsed("runs: {local: {workflows: [{id: wf}]}}\n"
                            "connectors:\n"
                            "  - name: c1\n"
                            "    module: hello\n"
                            "    settings:\n"
                            "      greeting: hi\n"
                            "      list: [a, b]\n"
                            "      \"a/b~c\": 1\n");
    ASSERT_EQ(c.connectors.size(), 1u);
    const auto& at = c.connectors[0].settings_at;
    expect_at(at, "", 6, 7); // the settings mapping starts at its first key
    expect_at(at, "/greeting", 6, 17);
    expect_at(at, "/greeting", 6, 7, true);
    expect_at(at, "/list", 7, 13);
    expect_at(at, "/list/1", 7, 17);
    // Keys are JSON Pointer tokens: '/' is "~1", '~' is "~0" (RFC 6901).
    expect_at(at, "/a~1b~0c", 8, 16);
    expect_at(at, "/a~1b~0c", 8, 7, true);
}

TEST(SettingsPositionsTest, AbsentSettingsArePlacedAtTheirEntry) {
    const config c = parsed("runs: {local: {workflows: [{id: wf}]}}\n"
                            "connectors:\n"
                            "  - {name: c1, module: hello}\n"
                            "subscriptions:\n"
                            "  - {id: s1, source: webhook, connector: c1, workflowId: wf}\n");
    ASSERT_EQ(c.connectors.size(), 1u);
    ASSERT_EQ(c.subscriptions.size(), 1u);
    EXPECT_EQ(c.connectors[0].settings_at.size(), 1u);
    expect_at(c.connectors[0].settings_at, "", 3, 5);
    expect_at(c.subscriptions[0].settings_at, "", 5, 5);
}

} // namespace
} // namespace wopbridge
