// The load gates: each refusal is one line naming the file and the reason.
#include "plugins/module_loader.hpp"
#include "support/build_paths.hpp"
#include "support/temp_dir.hpp"

#include "wopbridge/connector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

namespace wopbridge {
namespace {

using ::testing::HasSubstr;

std::string test_module(const std::string& name) {
    return std::string(WOPBRIDGE_TEST_MODULE_DIR) + "/" + name + ".so";
}

std::set<std::string> exported_symbols(const std::string& path) {
    std::set<std::string> out;
    const std::string cmd = "nm -D --defined-only '" + path + "' 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
        return out;
    }
    char line[1024];
    while (std::fgets(line, sizeof line, p) != nullptr) {
        std::string s(line);
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) {
            s.pop_back();
        }
        const auto space = s.rfind(' ');
        out.insert(space == std::string::npos ? s : s.substr(space + 1));
    }
    ::pclose(p);
    return out;
}

wb_status ok_validate(wb_str, char*, size_t) {
    return WB_OK;
}
wb_status ok_create(const wb_host_api*, wb_host*, wb_str, wb_connector**, char*, size_t) {
    return WB_OK;
}
wb_status ok_start(wb_connector*) {
    return WB_OK;
}
wb_status ok_subscribe(wb_connector*, const wb_subscription*, char*, size_t) {
    return WB_OK;
}
wb_status ok_unsubscribe(wb_connector*, wb_str) {
    return WB_OK;
}
void ok_request(wb_connector*, wb_request_ctx*, const wb_http_request*) {}
wb_status ok_stop(wb_connector*, int64_t) {
    return WB_OK;
}
void ok_destroy(wb_connector*) {}

class ModuleLoaderTest : public ::testing::Test {
  protected:
    static wb_connector_descriptor good_descriptor() {
        wb_connector_descriptor d{};
        d.struct_size = sizeof d;
        d.abi_major = WOPBRIDGE_ABI_MAJOR;
        d.abi_minor = WOPBRIDGE_ABI_MINOR;
        d.name = "inproc";
        d.version = "1.0.0";
        d.status = "stable";
        d.security_posture = "verifies nothing";
        d.sdk_build_id = "x";
        d.source = "webhook";
        d.config_schema_json = "{}";
        d.subscription_schema_json = "{\"type\":\"object\"}";
        d.capabilities = WB_CAP_HTTP_INGEST;
        d.validate = ok_validate;
        d.create = ok_create;
        d.start = ok_start;
        d.subscribe = ok_subscribe;
        d.unsubscribe = ok_unsubscribe;
        d.on_http_request = ok_request;
        d.stop = ok_stop;
        d.destroy = ok_destroy;
        return d;
    }

    static void expect_one_line_naming(const module_error& e, const std::string& path,
                                       const std::string& reason) {
        EXPECT_EQ(e.message, path + ": " + reason);
        EXPECT_EQ(e.message.find('\n'), std::string::npos);
    }
};

TEST_F(ModuleLoaderTest, LoadsAGoodModuleByPath) {
    auto m = load_module(test_module("good_echo"));
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->name, "good_echo");
    EXPECT_EQ(m->version, "1.2.3");
    EXPECT_EQ(m->status, "alpha");
    EXPECT_EQ(m->source, "webhook");
    EXPECT_EQ(m->abi_major, WOPBRIDGE_ABI_MAJOR);
    EXPECT_EQ(m->abi_minor, WOPBRIDGE_ABI_MINOR);
    EXPECT_EQ(m->capabilities, WB_CAP_HTTP_INGEST);
    EXPECT_FALSE(m->security_posture.empty());
    EXPECT_FALSE(m->sdk_build_id.empty());
    EXPECT_NE(m->descriptor, nullptr);
}

TEST_F(ModuleLoaderTest, LoadsByNameFromTheModulePath) {
    testing::temp_dir empty;
    auto m = load_module("good_echo", {empty.path().string(), WOPBRIDGE_TEST_MODULE_DIR});
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->path, test_module("good_echo"));
}

TEST_F(ModuleLoaderTest, RefusesAMissingPathNamingIt) {
    const std::string path = "/nonexistent/dir/absent.so";
    auto m = load_module(path);
    ASSERT_FALSE(m);
    expect_one_line_naming(m.error(), path, "not found");
    EXPECT_EQ(m.error().code, errc::not_found);
}

TEST_F(ModuleLoaderTest, RefusesAnUnknownNameNamingTheSearchedFile) {
    auto m = load_module("absent", {WOPBRIDGE_TEST_MODULE_DIR});
    ASSERT_FALSE(m);
    expect_one_line_naming(m.error(), test_module("absent"), "not found");
}

TEST_F(ModuleLoaderTest, AMissingBrokerModuleNamesThePackageThatInstallsIt) {
    testing::temp_dir empty;
    for (const std::string name : {"kafka", "nats", "queue", "rabbitmq"}) {
        auto m = load_module(name, {empty.path().string()});
        ASSERT_FALSE(m);
        expect_one_line_naming(m.error(), (empty.path() / (name + ".so")).string(),
                               "not found (the Debian package wopbridge-connector-" + name +
                                   " installs it)");
    }
    auto other = load_module("absent", {empty.path().string()});
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().message.find("Debian package"), std::string::npos);
}

TEST_F(ModuleLoaderTest, RefusesAModuleWithoutTheEntrySymbol) {
    const auto path = test_module("no_entry_symbol");
    auto m = load_module(path);
    ASSERT_FALSE(m);
    expect_one_line_naming(m.error(), path, "missing entry symbol wopbridge_connector_entry_v1");
}

TEST_F(ModuleLoaderTest, RefusesAnotherAbiMajor) {
    const auto path = test_module("bad_abi_major");
    auto m = load_module(path);
    ASSERT_FALSE(m);
    expect_one_line_naming(m.error(), path,
                           "ABI major " + std::to_string(WOPBRIDGE_ABI_MAJOR + 1) +
                               ", host supports " + std::to_string(WOPBRIDGE_ABI_MAJOR));
}

TEST_F(ModuleLoaderTest, RefusesANewerAbiMinor) {
    const auto path = test_module("newer_minor");
    auto m = load_module(path);
    ASSERT_FALSE(m);
    expect_one_line_naming(m.error(), path,
                           "ABI minor " + std::to_string(WOPBRIDGE_ABI_MINOR + 1) +
                               " is newer than host's " + std::to_string(WOPBRIDGE_ABI_MINOR));
}

TEST_F(ModuleLoaderTest, RefusesAnInvalidDescriptor) {
    const auto path = test_module("invalid_descriptor");
    auto m = load_module(path);
    ASSERT_FALSE(m);
    expect_one_line_naming(
        m.error(), path, "invalid descriptor: bad status value 'beta' (want stable, alpha or wip)");
}

TEST_F(ModuleLoaderTest, RefusesAFileThatIsNotASharedObject) {
    testing::temp_dir dir;
    const auto path = dir.file("junk.so");
    std::ofstream(path) << "not an ELF file";
    auto m = load_module(path);
    ASSERT_FALSE(m);
    EXPECT_THAT(m.error().message, ::testing::StartsWith(path + ": cannot load: "));
    EXPECT_EQ(m.error().message.find('\n'), std::string::npos);
}

TEST_F(ModuleLoaderTest, ReportsConfigRejectedByValidate) {
    const auto path = test_module("rejects_config");
    auto m = load_module(path);
    ASSERT_TRUE(m) << m.error().message;
    auto v = m->validate("{}");
    ASSERT_FALSE(v);
    expect_one_line_naming(v.error(), path, "config rejected: api_key is required");
}

TEST_F(ModuleLoaderTest, ValidatePassesGoodSettings) {
    auto m = load_module(test_module("good_echo"));
    ASSERT_TRUE(m);
    EXPECT_TRUE(m->validate(R"({"greeting":"hi"})"));
    auto v = m->validate(R"({"reject":true})");
    ASSERT_FALSE(v);
    EXPECT_THAT(v.error().message, HasSubstr("config rejected: setting 'reject' is not allowed"));
}

TEST_F(ModuleLoaderTest, AcceptsAGoodDescriptor) {
    const auto d = good_descriptor();
    EXPECT_EQ(descriptor_problem(&d), "");
}

TEST_F(ModuleLoaderTest, NamesEachDescriptorProblem) {
    EXPECT_EQ(descriptor_problem(nullptr), "invalid descriptor: entry returned null");
    struct bend {
        void (*change)(wb_connector_descriptor&);
        const char* want;
    };
    const bend cases[] = {
        {[](auto& d) { d.struct_size = 2; }, "invalid descriptor: struct_size 2 is too short"},
        {[](auto& d) { d.struct_size = offsetof(wb_connector_descriptor, validate); },
         "is shorter than ABI"},
        {[](auto& d) { d.name = nullptr; }, "invalid descriptor: missing or invalid name"},
        {[](auto& d) { d.name = "Bad Name"; }, "invalid descriptor: missing or invalid name"},
        {[](auto& d) { d.version = ""; }, "invalid descriptor: missing version"},
        {[](auto& d) { d.status = nullptr; }, "invalid descriptor: missing status"},
        {[](auto& d) { d.status = "gold"; }, "invalid descriptor: bad status value 'gold'"},
        {[](auto& d) { d.security_posture = nullptr; },
         "invalid descriptor: missing security_posture"},
        {[](auto& d) { d.source = ""; }, "invalid descriptor: missing source"},
        {[](auto& d) { d.validate = nullptr; }, "invalid descriptor: missing function validate"},
        {[](auto& d) { d.create = nullptr; }, "invalid descriptor: missing function create"},
        {[](auto& d) { d.destroy = nullptr; }, "invalid descriptor: missing function destroy"},
        {[](auto& d) { d.on_http_request = nullptr; },
         "invalid descriptor: missing function on_http_request"},
        {[](auto& d) { d.config_schema_json = "{not json"; },
         "invalid descriptor: config_schema_json is not valid JSON"},
        {[](auto& d) { d.subscription_schema_json = "[]"; },
         "invalid descriptor: subscription_schema_json is not a JSON object"},
        {[](auto& d) { d.config_schema_json = nullptr; },
         "invalid descriptor: missing config_schema_json"},
    };
    for (const auto& c : cases) {
        auto d = good_descriptor();
        c.change(d);
        EXPECT_THAT(descriptor_problem(&d), HasSubstr(c.want));
    }
    // Without the http-ingest capability on_http_request may be null.
    auto d = good_descriptor();
    d.capabilities = WB_CAP_LISTENER;
    d.on_http_request = nullptr;
    EXPECT_EQ(descriptor_problem(&d), "");
}

TEST_F(ModuleLoaderTest, ListsModulesWithBrokenOnesAndTheirReasons) {
    const auto rows = list_modules({WOPBRIDGE_TEST_MODULE_DIR});
    bool saw_good = false;
    bool saw_bad = false;
    for (const auto& r : rows) {
        if (r.name == "good_echo") {
            saw_good = true;
            EXPECT_EQ(r.version, "1.2.3");
            EXPECT_EQ(r.status, "alpha");
            EXPECT_EQ(r.abi, std::to_string(WOPBRIDGE_ABI_MAJOR) + "." +
                                 std::to_string(WOPBRIDGE_ABI_MINOR));
            EXPECT_EQ(r.error, "");
            EXPECT_FALSE(r.security_posture.empty());
        }
        if (r.name == "bad_abi_major") {
            saw_bad = true;
            EXPECT_THAT(r.error, HasSubstr("ABI major"));
            EXPECT_THAT(r.error, HasSubstr(test_module("bad_abi_major")));
        }
    }
    EXPECT_TRUE(saw_good);
    EXPECT_TRUE(saw_bad);
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end(),
                               [](const auto& a, const auto& b) { return a.path < b.path; }));
}

TEST_F(ModuleLoaderTest, FormatsTheListing) {
    std::vector<module_listing> rows(2);
    rows[0] = {"good", "1.0.0", "stable", "verifies X", "webhook", "1.0", "/m/good.so", ""};
    rows[1] = {"bad", "", "", "", "", "", "/m/bad.so", "/m/bad.so: ABI major 2, host supports 1"};
    EXPECT_EQ(format_listing(rows), "good 1.0.0 stable abi 1.0 source webhook /m/good.so\n"
                                    "    security: verifies X\n"
                                    "bad BROKEN /m/bad.so: ABI major 2, host supports 1\n");
    EXPECT_EQ(format_listing({}), "no connector modules found\n");
}

TEST_F(ModuleLoaderTest, DefaultModulePathIsNextToTheProgram) {
    const auto dirs = default_module_dirs();
    ASSERT_EQ(dirs.size(), 1u);
    EXPECT_THAT(dirs[0], ::testing::EndsWith("/lib/wopbridge/connectors"));
}

TEST_F(ModuleLoaderTest, BuiltModulesExportOnlyTheEntrySymbol) {
    EXPECT_EQ(exported_symbols(test_module("good_echo")),
              std::set<std::string>{WOPBRIDGE_ENTRY_SYMBOL});
    const std::string hello = std::string(WOPBRIDGE_MODULE_DIR) + "/hello.so";
    if (!std::filesystem::exists(hello)) {
        GTEST_SKIP() << hello << " not built";
    }
    EXPECT_EQ(exported_symbols(hello), std::set<std::string>{WOPBRIDGE_ENTRY_SYMBOL});
}

} // namespace
} // namespace wopbridge
