#include "support/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace wopbridge::testing {
inline namespace http_client {

namespace {

std::once_flag curl_once;

struct transfer {
    http_reply reply;
    const std::function<bool(const std::string&)>* on_data = nullptr;
    bool stopped = false;
};

size_t on_body(char* ptr, size_t size, size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    t->reply.body.append(ptr, size * n);
    if (t->on_data && (*t->on_data)(t->reply.body)) {
        t->stopped = true;
        return 0; // aborts the transfer
    }
    return size * n;
}

size_t on_header(char* ptr, size_t size, size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    std::string line(ptr, size * n);
    if (line.rfind("HTTP/", 0) == 0) {
        t->reply.headers.clear(); // a 100 Continue precedes the final header block
        return size * n;
    }
    auto colon = line.find(':');
    if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
            value.erase(value.begin());
        }
        while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
            value.pop_back();
        }
        t->reply.headers.emplace_back(std::move(name), std::move(value));
    }
    return size * n;
}

http_reply run(const http_call& call, const std::function<bool(const std::string&)>* on_data) {
    std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    transfer t;
    t.on_data = on_data;
    CURL* curl = curl_easy_init();
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : call.headers) {
        headers = curl_slist_append(headers, (k + ": " + v).c_str());
    }
    curl_easy_setopt(curl, CURLOPT_URL, call.url.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    if (call.method == "HEAD") {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    }
    if (!call.body.empty() || call.method == "POST" || call.method == "PATCH" ||
        call.method == "PUT") {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call.body.data());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(call.body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, call.timeout_ms);
    if (!call.local_address.empty()) {
        curl_easy_setopt(curl, CURLOPT_INTERFACE, ("host!" + call.local_address).c_str());
    }
    if (!call.ca_file.empty()) {
        curl_easy_setopt(curl, CURLOPT_CAINFO, call.ca_file.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &t.reply.status);
    curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME, &t.reply.seconds);
    if (rc != CURLE_OK && !(t.stopped && rc == CURLE_WRITE_ERROR)) {
        t.reply.error = curl_easy_strerror(rc);
        if (!on_data && t.reply.body.empty()) {
            t.reply.status = t.reply.status ? t.reply.status : 0;
        }
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return t.reply;
}

} // namespace

std::optional<std::string> http_reply::header(std::string_view name) const {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto& [k, v] : headers) {
        if (k == lower) {
            return v;
        }
    }
    return std::nullopt;
}

http_reply perform(const http_call& call) { return run(call, nullptr); }

http_reply perform_streaming(const http_call& call,
                             const std::function<bool(const std::string&)>& on_data) {
    return run(call, &on_data);
}

} // namespace http_client
} // namespace wopbridge::testing
