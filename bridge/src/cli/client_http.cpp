#include "cli/client_http.hpp"

#include <curl/curl.h>

#include <memory>

namespace wopbridge::cli {

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* user) {
    static_cast<std::string*>(user)->append(data, size * n);
    return size * n;
}

client_response http_call(const client_options& opts, const std::string& method,
                          const std::string& path, const std::string& body) {
    client_response out;
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (!curl) {
        out.transport_error = "cannot initialise libcurl";
        return out;
    }
    std::string base = opts.url;
    while (!base.empty() && base.back() == '/') {
        base.pop_back();
    }
    std::string url = base + path;
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Accept: application/json");
    if (!body.empty()) {
        headers = curl_slist_append(headers, "Content-Type: application/json");
    }
    std::string auth;
    if (!opts.api_key.empty()) {
        auth = "Authorization: Bearer " + opts.api_key;
        headers = curl_slist_append(headers, auth.c_str());
    }
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers,
                                                                             &curl_slist_free_all);
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &append_body);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &out.body);
    curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    if (!body.empty() || method == "POST" || method == "PATCH") {
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    CURLcode rc = curl_easy_perform(curl.get());
    if (rc != CURLE_OK) {
        out.transport_error = curl_easy_strerror(rc);
        return out;
    }
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &out.status);
    return out;
}

} // namespace wopbridge::cli
