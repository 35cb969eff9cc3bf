// The embedded /ui dashboard: every file of bridge/ui/ is in the binary, byte for byte, served
// with its content type, an ETag, no-cache and a CSP that the page itself satisfies (no inline
// script or style, no handler attributes, nothing from another origin).

#include "http/ui_assets.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace wopbridge::http::ui {
namespace {

std::string read_source(const std::string& name) {
    std::ifstream in(std::string(WOPBRIDGE_SOURCE_DIR) + "/bridge/ui/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

http_request get(std::string target, header_list headers = {}) {
    return http_request::make("GET", std::move(target), std::move(headers), "");
}

class UiAssetsTest : public ::testing::Test {};

TEST_F(UiAssetsTest, EveryServedSourceFileIsEmbeddedVerbatim) {
    int files = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(WOPBRIDGE_SOURCE_DIR) + "/bridge/ui")) {
        auto name = entry.path().filename().string();
        auto ext = entry.path().extension().string();
        if (ext != ".html" && ext != ".js" && ext != ".css") {
            continue;
        }
        ++files;
        const asset* a = find_asset(name);
        ASSERT_NE(a, nullptr) << name << " is not embedded: re-run cmake";
        EXPECT_EQ(a->body, read_source(name)) << name << " differs from the embedded copy";
    }
    EXPECT_GE(files, 4);
    EXPECT_EQ(static_cast<int>(assets().size()), files);
}

TEST_F(UiAssetsTest, ContentTypesFollowTheExtension) {
    EXPECT_EQ(find_asset("index.html")->content_type, "text/html; charset=utf-8");
    EXPECT_EQ(find_asset("app.js")->content_type, "text/javascript; charset=utf-8");
    EXPECT_EQ(find_asset("style.css")->content_type, "text/css; charset=utf-8");
    EXPECT_EQ(find_asset("README.md"), nullptr);
    EXPECT_EQ(find_asset("../index.html"), nullptr);
}

TEST_F(UiAssetsTest, ServeSetsCachingAndSecurityHeaders) {
    auto res = serve(get("/ui/app.js"), "app.js");
    EXPECT_EQ(res.status, 200);
    EXPECT_EQ(res.header("cache-control").value_or(""), "no-cache");
    EXPECT_EQ(res.header("x-content-type-options").value_or(""), "nosniff");
    EXPECT_EQ(res.header("content-security-policy").value_or(""), content_security_policy());
    auto etag = std::string(res.header("etag").value_or(""));
    ASSERT_EQ(etag.size(), 34u); // quoted 32 hex digits
    EXPECT_EQ(etag.front(), '"');

    auto cached = serve(get("/ui/app.js", {{"if-none-match", "\"other\", W/" + etag}}), "app.js");
    EXPECT_EQ(cached.status, 304);
    EXPECT_TRUE(cached.body.empty());
    EXPECT_EQ(serve(get("/ui/app.js", {{"if-none-match", "\"other\""}}), "app.js").status, 200);
    auto missing = serve(get("/ui/x.js"), "x.js");
    EXPECT_EQ(missing.status, 404);
    EXPECT_TRUE(missing.header("content-security-policy").has_value());
}

TEST_F(UiAssetsTest, PolicyForbidsInlineCodeAndOtherOrigins) {
    auto csp = std::string(content_security_policy());
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
    EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos);
    EXPECT_EQ(csp.find("unsafe"), std::string::npos);
    EXPECT_EQ(csp.find("http"), std::string::npos);
}

TEST_F(UiAssetsTest, PageNeedsNothingThePolicyForbids) {
    for (const auto& a : assets()) {
        std::string body(a.body);
        // No third-party origins (no CDN), no inline script/style, no handler attributes, no eval.
        EXPECT_EQ(body.find("http://"), std::string::npos) << a.name;
        EXPECT_EQ(body.find("https://"), std::string::npos) << a.name;
        EXPECT_EQ(body.find("eval("), std::string::npos) << a.name;
        EXPECT_EQ(body.find("innerHTML"), std::string::npos) << a.name; // text goes via textContent
        if (a.name.size() > 5 && a.name.substr(a.name.size() - 5) == ".html") {
            EXPECT_FALSE(std::regex_search(body, std::regex(R"(<script(?![^>]*\bsrc=))")))
                << a.name;
            EXPECT_FALSE(std::regex_search(body, std::regex(R"(\son[a-z]+=)"))) << a.name;
            EXPECT_EQ(body.find("<style"), std::string::npos) << a.name;
            EXPECT_EQ(body.find("style=\""), std::string::npos) << a.name;
        }
    }
    // The key is sent as a bearer header, never in a URL.
    auto api = std::string(find_asset("api.js")->body);
    EXPECT_NE(api.find("Authorization: `Bearer ${key}`"), std::string::npos);
    EXPECT_NE(api.find("sessionStorage"), std::string::npos);
    EXPECT_EQ(api.find("localStorage"), std::string::npos);
}

} // namespace
} // namespace wopbridge::http::ui
