// `wopbridge send`: the local dev loop. Sends one test event to a running bridge the way the
// subscription's provider would: signed with the secret the config file holds (Standard Webhooks,
// Slack v0, Twilio), or as a browser posts a form (its Origin, a fresh form token).
#include "cli/client_http.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"

#include "wopbridge/http_util.hpp"
#include "wopbridge/signatures.hpp"

#include <boost/json.hpp>
#include <curl/curl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace wopbridge::cli {
namespace {

namespace json = boost::json;

constexpr const char* send_usage =
    "usage: wopbridge send --config FILE SUBSCRIPTION [--file BODY | --data TEXT] [--url URL]\n"
    "Sends one test event to a running bridge as SUBSCRIPTION's provider would, with the secret\n"
    "FILE holds: a Standard Webhooks signature (webhook subscriptions), Slack's v0 signature, a\n"
    "Twilio signature (sms), or a browser's form post (forms: its Origin and a fresh token).\n"
    "  --file BODY / --data TEXT  the body (JSON for webhooks and Slack, form fields a=1&b=2 for\n"
    "                             sms and forms); a small sample when neither is given\n"
    "  --url URL                  the bridge (default $WOPBRIDGE_URL, else the config's publicUrl)\n"
    "Prints the answer's status and body; exit 0 on 2xx/3xx, 1 otherwise, 2 on a usage error.\n";

struct request {
    std::string method = "POST";
    std::string url;
    std::vector<std::string> headers; // "Name: value"
    std::string body;
};

struct answer {
    long status = 0;
    std::string body;
    std::string error;
};

answer perform(const request& r) {
    answer out;
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (!curl) {
        out.error = "cannot initialise libcurl";
        return out;
    }
    curl_slist* list = nullptr;
    for (const auto& h : r.headers) {
        list = curl_slist_append(list, h.c_str());
    }
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> guard(list, &curl_slist_free_all);
    curl_easy_setopt(curl.get(), CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, r.method.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &append_body);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &out.body);
    curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    if (r.method == "POST") {
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, r.body.data());
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body.size()));
    }
    if (CURLcode rc = curl_easy_perform(curl.get()); rc != CURLE_OK) {
        out.error = curl_easy_strerror(rc);
        return out;
    }
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &out.status);
    return out;
}

std::string random_hex(std::size_t bytes) {
    std::random_device rd;
    std::string out;
    for (std::size_t i = 0; i < bytes; ++i) {
        const auto b = static_cast<unsigned>(rd() & 0xff);
        out += "0123456789abcdef"[b >> 4];
        out += "0123456789abcdef"[b & 15];
    }
    return out;
}

std::int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A settings object's string, or the first string of its array form (`signingSecrets`).
std::string setting(const std::string& settings_json, const char* one, const char* many = nullptr) {
    boost::system::error_code ec;
    auto v = json::parse(settings_json, ec);
    if (ec || !v.is_object()) {
        return {};
    }
    const auto& o = v.as_object();
    if (const auto* s = o.if_contains(one); s != nullptr && s->is_string()) {
        return std::string(s->as_string());
    }
    if (many != nullptr) {
        if (const auto* a = o.if_contains(many); a != nullptr && a->is_array() &&
                                                 !a->as_array().empty() &&
                                                 a->as_array().front().is_string()) {
            return std::string(a->as_array().front().as_string());
        }
    }
    return {};
}

std::string first_origin(const std::string& settings_json) {
    boost::system::error_code ec;
    auto v = json::parse(settings_json, ec);
    if (ec || !v.is_object()) {
        return {};
    }
    const auto* a = v.as_object().if_contains("allowedOrigins");
    if (a == nullptr || !a->is_array() || a->as_array().empty() || !a->as_array()[0].is_string()) {
        return {};
    }
    return std::string(a->as_array()[0].as_string());
}

// The subscription's connector secret: its own settings override the instance's.
std::string connector_secret(const config& c, const subscription_config& s, const char* one,
                             const char* many) {
    if (auto own = setting(s.settings_json, one, many); !own.empty()) {
        return own;
    }
    for (const auto& k : c.connectors) {
        if (k.name == s.connector) {
            return setting(k.settings_json, one, many);
        }
    }
    return {};
}

std::string module_of(const config& c, const std::string& connector) {
    for (const auto& k : c.connectors) {
        if (k.name == connector) {
            return k.module;
        }
    }
    return {};
}

bool fail(const std::string& why) {
    std::fprintf(stderr, "wopbridge send: %s\n", why.c_str());
    return false;
}

bool standard_webhook(const subscription_config& s, request& r, std::string body) {
    if (body.empty()) {
        body = R"({"type":"wopbridge.test","data":{"sentBy":"wopbridge send"}})";
    }
    r.headers = {"Content-Type: application/json"};
    if (s.verification != verification_mode::none) {
        const std::string secret = s.signing_secret.substr(0, s.signing_secret.find(','));
        if (secret.empty()) {
            return fail("subscription " + s.id + " has no signingSecret in the config");
        }
        const std::string id = "msg_send_" + random_hex(12);
        const auto ts = now_s();
        auto sig = sig::sign_standard_webhooks(secret, id, ts, body);
        if (!sig) {
            return fail("the signingSecret of " + s.id + " is not a whsec_<base64> secret");
        }
        r.headers.push_back("webhook-id: " + id);
        r.headers.push_back("webhook-timestamp: " + std::to_string(ts));
        r.headers.push_back("webhook-signature: " + *sig);
    }
    r.body = std::move(body);
    return true;
}

bool slack(const config& c, const subscription_config& s, request& r, std::string body) {
    const std::string secret = connector_secret(c, s, "signingSecret", "signingSecrets");
    if (secret.empty()) {
        return fail("no Slack signingSecret for " + s.id + " in the config");
    }
    if (body.empty()) {
        body = R"({"type":"event_callback","team_id":"T0SEND","api_app_id":"A0SEND",)"
               R"("event_id":"Ev)" +
               random_hex(8) +
               R"(","event_time":)" + std::to_string(now_s()) +
               R"(,"event":{"type":"app_mention","user":"U0SEND","channel":"C0SEND",)"
               R"("text":"hello from wopbridge send","ts":")" +
               std::to_string(now_s()) + R"(.000100"}})";
    }
    const std::string ts = std::to_string(now_s());
    const bool is_json = !body.empty() && body.front() == '{';
    r.headers = {std::string("Content-Type: ") +
                     (is_json ? "application/json" : "application/x-www-form-urlencoded"),
                 "X-Slack-Request-Timestamp: " + ts,
                 "X-Slack-Signature: " + sig::sign_slack_v0(secret, ts, body)};
    r.body = std::move(body);
    return true;
}

bool twilio(const config& c, const subscription_config& s, request& r, std::string body) {
    const std::string token = connector_secret(c, s, "authToken", "authTokens");
    if (token.empty()) {
        return fail("no Twilio authToken for " + s.id + " in the config");
    }
    if (body.empty()) {
        body = "MessageSid=SM" + random_hex(16) +
               "&AccountSid=AC0send&From=%2B15550100001&To=%2B15550100002"
               "&Body=hello+from+wopbridge+send&NumMedia=0";
    }
    auto params = http::parse_form_urlencoded(body);
    if (!params) {
        return fail("the sms body must be form fields (a=1&b=2)");
    }
    // Twilio signs the URL it calls: the sms connector's publicUrl when set, else this one.
    std::string signed_url = setting(s.settings_json, "publicUrl");
    if (signed_url.empty()) {
        signed_url = c.server.public_url + "/v1/ingest/" + s.id;
    }
    r.headers = {"Content-Type: application/x-www-form-urlencoded",
                 "X-Twilio-Signature: " + sig::sign_twilio(token, signed_url, *params)};
    r.body = std::move(body);
    return true;
}

bool form(const subscription_config& s, const std::string& base, request& r, std::string body) {
    const std::string origin = first_origin(s.settings_json);
    if (origin.empty()) {
        return fail("subscription " + s.id + " has no allowedOrigins in the config");
    }
    if (body.empty()) {
        body = "name=Ada+Lovelace&email=ada%40example.com&message=hello+from+wopbridge+send";
    }
    if (!setting(s.settings_json, "tokenSecret").empty()) {
        // As the page does: fetch a token, then post it in the token field.
        request t;
        t.method = "GET";
        t.url = base + "/v1/ingest/" + s.id + "/token";
        t.headers = {"Origin: " + origin, "Accept: application/json"};
        auto got = perform(t);
        boost::system::error_code ec;
        auto v = json::parse(got.body, ec);
        if (got.status != 200 || ec || !v.is_object() || !v.as_object().contains("token")) {
            return fail("the form token request answered " + std::to_string(got.status) + " " +
                        got.body + got.error);
        }
        const auto& o = v.as_object();
        const std::string field =
            o.contains("field") ? std::string(o.at("field").as_string()) : "_token";
        body += "&" + http::percent_encode(field, true) + "=" +
                http::percent_encode(std::string(o.at("token").as_string()), true);
    }
    r.headers = {"Content-Type: application/x-www-form-urlencoded", "Origin: " + origin,
                 "Accept: application/json"};
    r.body = std::move(body);
    return true;
}

std::optional<std::string> read_body(const arg_parser& p) {
    if (const auto file = p.value("file"); !file.empty()) {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            fail("cannot read " + file);
            return std::nullopt;
        }
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    return p.value("data");
}

} // namespace

int run_send(const std::vector<std::string>& args) {
    arg_parser p(args);
    if (p.flag("help")) {
        std::fputs(send_usage, stdout);
        return 0;
    }
    const std::string path = p.value("config");
    if (!p.error.empty() || path.empty() || p.positional().size() != 1) {
        std::fputs(p.error.empty() ? send_usage : (p.error + "\n").c_str(), stderr);
        return 2;
    }
    auto loaded = load_config(path);
    for (const auto& e : loaded.errors) {
        std::fprintf(stderr, "%s\n", e.to_string().c_str());
    }
    if (!loaded.errors.empty() || !loaded.value) {
        return 2;
    }
    const config& c = *loaded.value;
    const std::string& id = p.positional().front();
    const subscription_config* sub = nullptr;
    for (const auto& s : c.subscriptions) {
        if (s.id == id) {
            sub = &s;
        }
    }
    if (sub == nullptr) {
        std::fprintf(stderr, "wopbridge send: %s has no subscription '%s'\n", path.c_str(),
                     id.c_str());
        return 2;
    }
    auto body = read_body(p);
    if (!body) {
        return 2;
    }
    std::string base = p.value("url");
    if (base.empty()) {
        const char* env = std::getenv("WOPBRIDGE_URL");
        base = env != nullptr && *env != '\0' ? env : c.server.public_url;
    }
    while (!base.empty() && base.back() == '/') {
        base.pop_back();
    }
    request r;
    r.url = base + "/v1/ingest/" + sub->id;
    const std::string module = sub->connector.empty() ? "" : module_of(c, sub->connector);
    bool ok = false;
    if (sub->source == source_kind::schedule) {
        std::fprintf(stderr, "wopbridge send: %s is a schedule; it fires by itself\n", id.c_str());
        return 2;
    } else if (module == "slack") {
        ok = slack(c, *sub, r, std::move(*body));
    } else if (module == "sms") {
        ok = twilio(c, *sub, r, std::move(*body));
    } else if (module == "forms") {
        ok = form(*sub, base, r, std::move(*body));
    } else if (module == "email") {
        std::fprintf(stderr, "wopbridge send: %s takes mail over SMTP: send it with any SMTP client "
                             "(connectors/email/README.md)\n", id.c_str());
        return 2;
    } else if (!module.empty()) {
        r.headers = {"Content-Type: application/json"};
        r.body = body->empty() ? std::string(R"({"sentBy":"wopbridge send"})") : std::move(*body);
        ok = true;
    } else {
        ok = standard_webhook(*sub, r, std::move(*body));
    }
    if (!ok) {
        return 2;
    }
    auto got = perform(r);
    if (got.status == 0) {
        std::fprintf(stderr, "wopbridge send: %s: %s\n", r.url.c_str(), got.error.c_str());
        return 1;
    }
    std::printf("%ld %s\n", got.status, got.body.c_str());
    return got.status >= 200 && got.status < 400 ? 0 : 1;
}

} // namespace wopbridge::cli
