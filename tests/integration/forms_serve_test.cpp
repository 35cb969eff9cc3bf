// The forms connector through the real `wopbridge serve`: examples/forms/contact.html, served by the
// test over loopback (so its Origin is http://127.0.0.1:<page port>, on the allow-list), is filled
// and submitted by headless Chromium with a file input (multipart/form-data) and a signed token the
// page fetches; the browser is sent (303) to the configured success page and one run starts with the
// right causationId, the upload reaching it as an attachment reference. A foreign Origin (libcurl)
// is refused and starts nothing.
#include "support/browser.hpp"
#include "support/http_client.hpp"
#include "support/http_test_server.hpp"
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace wopbridge::testing::forms_serve_test {
namespace {

namespace json = boost::json;

constexpr const char* sub = "contact";

std::string example_file(const std::string& name) {
    return read_text_file(std::string(WOPBRIDGE_SOURCE_DIR) + "/examples/forms/" + name);
}

class FormsServeTest : public ::testing::Test {
protected:
    void SetUp() override {
        // The page server first: the allow-list and the success URL name its port. The page's
        // hard-coded bridge address is replaced by the real one once serve has started.
        pages_ = std::make_unique<http_test_server>([this](const http_request& req) {
            http_response res;
            res.headers = {{"content-type", "text/html; charset=utf-8"}};
            const std::string path = req.target.substr(0, req.target.find('?'));
            if (path == "/contact.html") {
                res.body = example_file("contact.html");
                for (std::size_t at; (at = res.body.find("http://127.0.0.1:8080")) !=
                                     std::string::npos;) {
                    res.body.replace(at, 21, bridge_url_);
                }
            } else if (path == "/thanks.html") {
                res.body = example_file("thanks.html");
            } else {
                res.status = 404;
                res.body = "not found";
            }
            return res;
        });
        page_origin_ = pages_->base_url();
        std::filesystem::create_directories(dir_.file("events"));
        std::ofstream(dir_.file("wopbridge.yaml"))
            << probe_config_prelude(dir_.path().string(), "http://127.0.0.1:8080")
            << "runs:\n"
               "  local:\n"
               "    workflows:\n"
            << capturing_workflow_yaml("contact-form", dir_.file("events"))
            << "connectors:\n"
               "  - {name: forms, module: forms, settings: {maxBodyBytes: 10485760, maxParts: 50, "
               "maxFileBytes: 5242880}}\n"
               "subscriptions:\n"
               "  - id: contact\n"
               "    source: form\n"
               "    connector: forms\n"
               "    workflowId: contact-form\n"
               "    settings:\n"
               "      allowedOrigins: [\""
            << page_origin_
            << "\"]\n"
               "      honeypotField: website\n"
               "      tokenSecret: form-token-secret-0123456789abcdef\n"
               "      submissionIdField: submission_id\n"
               "      successUrl: "
            << page_origin_
            << "/thanks.html\n"
               "      errorUrl: "
            << page_origin_ << "/contact.html\n";
        ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log")))
            << serve_.error;
        bridge_url_ = serve_.url();
        probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
    }

    void TearDown() override {
        if (probe_) {
            serve_.signal(SIGTERM);
            EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
        }
        if (pages_) {
            pages_->stop();
        }
    }

    std::string token_for(const std::string& origin) {
        http_call c;
        c.url = serve_.url() + "/v1/ingest/" + sub + "/token";
        c.headers = {{"origin", origin}};
        auto r = perform(c);
        EXPECT_EQ(r.status, 200) << r.body;
        boost::system::error_code ec;
        auto v = json::parse(r.body, ec);
        return !ec && v.is_object() ? std::string(v.at("token").as_string()) : std::string();
    }

    http_reply post_form(const std::string& origin, const std::string& body, bool json_client) {
        http_call c;
        c.method = "POST";
        c.url = serve_.url() + "/v1/ingest/" + sub;
        c.headers = {{"content-type", "application/x-www-form-urlencoded"}};
        if (!origin.empty()) {
            c.headers.emplace_back("origin", origin);
        }
        if (json_client) {
            c.headers.emplace_back("accept", "application/json");
        }
        c.body = body;
        return perform(c); // libcurl does not follow the 303
    }

    temp_dir dir_;
    std::unique_ptr<http_test_server> pages_;
    std::string page_origin_;
    std::string bridge_url_ = "http://127.0.0.1:8080";
    serve_process serve_;
    std::unique_ptr<serve_probe> probe_;
};

TEST_F(FormsServeTest, BrowserSubmitsTheExamplePageAndStartsOneRun) {
    if (auto why = browser_unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << why;
    }
    const std::string upload = "name,printers\nada,42\n";
    json::object arg{
        {"pageUrl", page_origin_ + "/contact.html"},
        {"formSelector", "#contact"},
        {"waitForFilled", json::array{"#token", "#submission-id"}},
        {"fields", json::object{{"name", "Ada Lovelace"},
                                {"email", "ada@example.com"},
                                {"topic", json::array{"sales", "support"}},
                                {"message", "Please call me back."}}},
        {"files", json::object{{"attachment", json::object{{"filename", "printers.csv"},
                                                           {"mimeType", "text/csv"},
                                                           {"content", upload}}}}},
        {"expectUrl", page_origin_ + "/thanks.html"}};
    browser_run run = run_browser_script("form_submit.mjs", json::serialize(arg));
    ASSERT_EQ(run.exit_code, 0) << run.stdout_text << read_text_file(dir_.file("serve.log"));
    auto result = json::parse(run.last_line).as_object();
    EXPECT_EQ(result.at("url").as_string(), page_origin_ + "/thanks.html");
    EXPECT_EQ(result.at("title"), "Thank you");
    bool saw_303 = false;
    for (const auto& n : result.at("navigations").as_array()) {
        if (n.at("url").as_string() == serve_.url() + "/v1/ingest/contact" &&
            n.at("method") == "POST") {
            saw_303 = n.at("status") == 303;
        }
    }
    EXPECT_TRUE(saw_303) << run.last_line;

    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));
    ASSERT_TRUE(probe_->run_finished(runs[0]));
    auto event = json::parse(read_text_file(dir_.file("events/" + runs[0] + ".json"))).as_object();
    EXPECT_EQ(event.at("source"), "form");
    const auto& form = event.at("form").as_object();
    const auto& fields = form.at("fields").as_object();
    EXPECT_EQ(fields.at("name"), "Ada Lovelace");
    EXPECT_EQ(fields.at("email"), "ada@example.com");
    EXPECT_EQ(fields.at("topic"), (json::array{"sales", "support"}));
    EXPECT_FALSE(fields.contains("_token")) << json::serialize(fields);
    EXPECT_FALSE(fields.contains("website")) << json::serialize(fields);
    ASSERT_EQ(form.at("files").as_array().size(), 1u) << json::serialize(form);
    const auto& file = form.at("files").as_array()[0].as_object();
    const std::string ref(file.at("ref").as_string());
    EXPECT_EQ(ref.rfind("att_", 0), 0u);
    EXPECT_EQ(file.at("filename"), "printers.csv");
    EXPECT_EQ(file.at("bytes").to_number<std::size_t>(), upload.size());
    EXPECT_EQ(json::serialize(event).find("ada,42"), std::string::npos); // not inline
    EXPECT_EQ(read_text_file(dir_.file("attachments/" + ref.substr(4))), upload);
}

TEST_F(FormsServeTest, ForgedFloodsAreRefusedBeforeTheFormIsParsed) {
    // Four million empty fields (8 MiB): a foreign origin is refused on its header, an allowed
    // one on the field count (maxParts 50), neither by building the fields; nor is a forged
    // token, read by a scan, allowed to cost the parse of a large body.
    const long peak_before = proc_status_kib(serve_.pid(), "VmHWM");
    std::string flood;
    flood.reserve(8 << 20);
    while (flood.size() < (8u << 20)) {
        flood += "a&";
    }
    auto foreign = post_form("https://evil.example", flood, true);
    EXPECT_EQ(foreign.status, 403) << foreign.body;
    auto counted = post_form(page_origin_, flood, true);
    EXPECT_EQ(counted.status, 413) << counted.body;
    EXPECT_NE(counted.body.find("maxParts"), std::string::npos) << counted.body;
    auto forged = post_form(page_origin_,
                            "_token=1.2.3&message=" + std::string(6 << 20, 'm'), true);
    EXPECT_EQ(forged.status, 403) << forged.body;
    const long grown = proc_status_kib(serve_.pid(), "VmHWM") - peak_before;
    EXPECT_LT(grown, 96 * 1024) << "peak memory grew by " << grown << " KiB";
    EXPECT_TRUE(probe_->nothing_started(sub, 0));
}

TEST_F(FormsServeTest, ForeignOriginIsRefusedAndStartsNoRun) {
    const std::string token = token_for(page_origin_);
    ASSERT_FALSE(token.empty());
    const std::string body = "_token=" + token + "&name=Mallory&message=spam";

    auto json_client = post_form("https://evil.example", body, true);
    EXPECT_EQ(json_client.status, 403) << json_client.body;
    EXPECT_NE(json_client.body.find("\"forbidden\""), std::string::npos) << json_client.body;
    auto browser_like = post_form("https://evil.example", body, false);
    EXPECT_EQ(browser_like.status, 303);
    EXPECT_EQ(browser_like.header("location").value_or(""),
              page_origin_ + "/contact.html?error=forbidden");
    EXPECT_EQ(post_form("", body, true).status, 403); // neither Origin nor Referer
    EXPECT_EQ(post_form("null", body, true).status, 403);
    EXPECT_TRUE(probe_->nothing_started(sub, 0));

    // The very same request from the allowed origin is accepted: only the origin was refused.
    auto allowed = post_form(page_origin_, body, true);
    EXPECT_EQ(allowed.status, 202) << allowed.body;
    std::vector<std::string> runs;
    ASSERT_TRUE(probe_->runs_started(sub, 1, &runs));
    EXPECT_NE(allowed.body.find(runs[0]), std::string::npos) << allowed.body;
}

} // namespace
} // namespace wopbridge::testing::forms_serve_test
