#include "support/http_multi.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace wopbridge::testing {
namespace {

struct slot {
    http_reply* reply = nullptr;
    curl_slist* headers = nullptr;
};

size_t on_body(char* ptr, size_t size, size_t n, void* user) {
    static_cast<http_reply*>(user)->body.append(ptr, size * n);
    return size * n;
}

size_t on_header(char* ptr, size_t size, size_t n, void* user) {
    auto* reply = static_cast<http_reply*>(user);
    std::string line(ptr, size * n);
    auto colon = line.find(':');
    if (line.rfind("HTTP/", 0) == 0) {
        reply->headers.clear();
    } else if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
            value.erase(value.begin());
        }
        while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) {
            value.pop_back();
        }
        reply->headers.emplace_back(std::move(name), std::move(value));
    }
    return size * n;
}

CURL* make_easy(const http_call& call, http_reply& reply, slot& s) {
    CURL* curl = curl_easy_init();
    for (const auto& [k, v] : call.headers) {
        s.headers = curl_slist_append(s.headers, (k + ": " + v).c_str());
    }
    curl_easy_setopt(curl, CURLOPT_URL, call.url.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    if (!call.body.empty() || call.method == "POST") {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call.body.data());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(call.body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, s.headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reply);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, call.timeout_ms);
    if (!call.local_address.empty()) {
        curl_easy_setopt(curl, CURLOPT_INTERFACE, ("host!" + call.local_address).c_str()); // copied
    }
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    // One connection per call: a kill must find each request on its own socket.
    curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(curl, CURLOPT_PRIVATE, &s);
    s.reply = &reply;
    return curl;
}

} // namespace

std::vector<http_reply> perform_all(const std::vector<http_call>& calls, int max_parallel,
                                    std::atomic<int>* answered) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    std::vector<http_reply> replies(calls.size());
    std::vector<slot> slots(calls.size());
    CURLM* multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(max_parallel));
    std::size_t next = 0;
    int open = 0;
    auto add_more = [&] {
        while (next < calls.size() && open < max_parallel) {
            curl_multi_add_handle(multi, make_easy(calls[next], replies[next], slots[next]));
            ++next;
            ++open;
        }
    };
    add_more();
    while (open > 0) {
        int running = 0;
        curl_multi_perform(multi, &running);
        int queued = 0;
        while (CURLMsg* m = curl_multi_info_read(multi, &queued)) {
            if (m->msg != CURLMSG_DONE) {
                continue;
            }
            CURL* e = m->easy_handle;
            slot* s = nullptr;
            curl_easy_getinfo(e, CURLINFO_PRIVATE, &s);
            long status = 0;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &s->reply->seconds);
            if (m->data.result != CURLE_OK) {
                s->reply->error = curl_easy_strerror(m->data.result);
                status = 0; // a reply cut short is not an answer
            }
            s->reply->status = status;
            if (status != 0 && answered != nullptr) {
                answered->fetch_add(1);
            }
            curl_multi_remove_handle(multi, e);
            curl_easy_cleanup(e);
            curl_slist_free_all(s->headers);
            s->headers = nullptr;
            --open;
        }
        add_more();
        if (open > 0) {
            curl_multi_poll(multi, nullptr, 0, 50, nullptr);
        }
    }
    curl_multi_cleanup(multi);
    return replies;
}

} // namespace wopbridge::testing
