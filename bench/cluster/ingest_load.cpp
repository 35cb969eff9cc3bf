// A small load generator for bench/cluster/measure.sh: signed Standard Webhooks POSTs to
// /v1/ingest/<subscription> spread round-robin over one or more nodes, a fixed number of requests
// with a fixed number in flight (libcurl multi, keep-alive connections). Prints one JSON line:
// requests sent, acknowledged (2xx), other answers, failures, seconds and accepted per second.
//
//   wopbridge_ingest_load --url http://127.0.0.1:8081 [--url ...] --secret whsec_...
//       [--subscription orders] [--requests 3000] [--concurrency 64] [--prefix run1]
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace {

std::string base64(const unsigned char* data, std::size_t n) {
    std::string out(4 * ((n + 2) / 3), '\0');
    const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data,
                                    static_cast<int>(n));
    out.resize(static_cast<std::size_t>(len));
    return out;
}

std::string unbase64(const std::string& text) {
    std::string out(3 * text.size() / 4 + 3, '\0');
    const int len = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                    reinterpret_cast<const unsigned char*>(text.data()),
                                    static_cast<int>(text.size()));
    if (len < 0) {
        return {};
    }
    std::size_t n = static_cast<std::size_t>(len);
    // EVP_DecodeBlock counts the padding as zero bytes.
    for (std::size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) {
        --n;
    }
    out.resize(n);
    return out;
}

// "v1," + base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}"))
std::string sign(const std::string& key, const std::string& id, long ts, const std::string& body) {
    const std::string message = id + "." + std::to_string(ts) + "." + body;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_len);
    return "v1," + base64(mac, mac_len);
}

struct transfer {
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    std::string body;
    std::string url;
};

std::size_t discard(char*, std::size_t n, std::size_t m, void*) {
    return n * m;
}

int usage() {
    std::fprintf(stderr, "usage: wopbridge_ingest_load --url URL [--url URL]... --secret whsec_... "
                         "[--subscription ID] [--requests N] [--concurrency N] [--prefix P]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> urls;
    std::string secret;
    std::string subscription = "orders";
    std::string prefix = "load";
    long requests = 3000;
    long concurrency = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const std::string v = argv[i + 1];
        if (k == "--url") {
            urls.push_back(v);
        } else if (k == "--secret") {
            secret = v;
        } else if (k == "--subscription") {
            subscription = v;
        } else if (k == "--requests") {
            requests = std::atol(v.c_str());
        } else if (k == "--concurrency") {
            concurrency = std::atol(v.c_str());
        } else if (k == "--prefix") {
            prefix = v;
        } else {
            return usage();
        }
    }
    if (urls.empty() || secret.rfind("whsec_", 0) != 0 || requests <= 0 || concurrency <= 0) {
        return usage();
    }
    const std::string key = unbase64(secret.substr(6));
    if (key.empty()) {
        std::fprintf(stderr, "--secret: not whsec_<base64>\n");
        return 2;
    }

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM* multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, concurrency);
    std::vector<std::unique_ptr<transfer>> pool; // finished handles are reused (keep-alive)
    long next = 0;
    long in_flight = 0;
    long acked = 0;
    long other = 0;
    long failed = 0;
    long first_other = 0; // the first non-2xx status seen, for the report
    const auto started = std::chrono::steady_clock::now();

    auto launch = [&](std::unique_ptr<transfer> t) {
        const long n = next++;
        // Standard Webhooks ids: 16-128 characters of [A-Za-z0-9_-].
        char serial[24];
        std::snprintf(serial, sizeof serial, "%012ld", n);
        const std::string id = "msg_" + prefix + "_" + serial;
        const long ts = static_cast<long>(std::time(nullptr));
        t->body = R"({"order":")" + id + R"(","amount":42,"items":[{"sku":"A-1","qty":2}]})";
        t->url = urls[static_cast<std::size_t>(n) % urls.size()] + "/v1/ingest/" + subscription;
        curl_slist_free_all(t->headers);
        t->headers = nullptr;
        t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
        t->headers = curl_slist_append(t->headers, ("webhook-id: " + id).c_str());
        t->headers =
            curl_slist_append(t->headers, ("webhook-timestamp: " + std::to_string(ts)).c_str());
        t->headers = curl_slist_append(
            t->headers, ("webhook-signature: " + sign(key, id, ts, t->body)).c_str());
        if (t->easy == nullptr) {
            t->easy = curl_easy_init();
        }
        curl_easy_setopt(t->easy, CURLOPT_URL, t->url.c_str());
        curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body.c_str());
        curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
        curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, 30000L);
        curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t.get());
        curl_multi_add_handle(multi, t->easy);
        pool.push_back(std::move(t));
        ++in_flight;
    };

    for (long i = 0; i < concurrency && next < requests; ++i) {
        launch(std::make_unique<transfer>());
    }
    while (in_flight > 0) {
        int running = 0;
        curl_multi_perform(multi, &running);
        int queued = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
            if (msg->msg != CURLMSG_DONE) {
                continue;
            }
            transfer* t = nullptr;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
            long status = 0;
            if (msg->data.result == CURLE_OK) {
                curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
            }
            if (status >= 200 && status < 300) {
                ++acked;
            } else if (status != 0) {
                ++other;
                first_other = first_other == 0 ? status : first_other;
            } else {
                ++failed;
            }
            curl_multi_remove_handle(multi, t->easy);
            --in_flight;
            std::unique_ptr<transfer> mine;
            for (auto& p : pool) {
                if (p.get() == t) {
                    mine = std::move(p);
                    p = std::move(pool.back());
                    pool.pop_back();
                    break;
                }
            }
            if (next < requests) {
                launch(std::move(mine));
            } else {
                curl_slist_free_all(mine->headers);
                curl_easy_cleanup(mine->easy);
            }
        }
        if (in_flight > 0) {
            curl_multi_poll(multi, nullptr, 0, 100, nullptr);
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    std::printf("{\"nodes\":%zu,\"requests\":%ld,\"concurrency\":%ld,\"acknowledged\":%ld,"
                "\"other\":%ld,\"first_other_status\":%ld,\"failed\":%ld,\"seconds\":%.3f,"
                "\"accepted_per_second\":%.1f}\n",
                urls.size(), requests, concurrency, acked, other, first_other, failed, secs,
                secs > 0 ? acked / secs : 0.0);
    return failed + other == 0 ? 0 : 1;
}
