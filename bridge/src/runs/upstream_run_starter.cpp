// The upstream starter: POST {base_url}/v1/runs on an OpenWOP host. One worker thread drives a
// libcurl multi handle (no thread per request); start() only queues and wakes it.
// Classification (the delivery engine decides what to do with it):
//   200/201 + runId        -> started
//   408, 429, 5xx          -> retry (Retry-After honoured: seconds or HTTP-date)
//   409 idempotency_in_flight / run_already_active -> retry (the same key is being processed)
//   other 3xx/4xx          -> permanent; reason = status + envelope error code, never body text
//   timeouts, connection and TLS errors -> retry
// Redirects are never followed (the Authorization header must not travel elsewhere).

#include "runs/run_starter.hpp"
#include "core/thread_name.hpp"

#include <boost/json.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace wopbridge {
namespace {

constexpr std::size_t max_response_bytes = 64 * 1024;

millis wall_now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.remove_suffix(1);
    }
    return std::string(s);
}

// Retry-After: delta-seconds or an HTTP-date; 0 when absent or unparseable.
millis parse_retry_after(const std::string& value, millis now_ms) {
    std::string v = trim(value);
    if (v.empty()) {
        return 0;
    }
    if (std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        if (v.size() > 9) {
            return 24LL * 3600 * 1000; // absurdly large: cap at a day
        }
        return std::stoll(v) * 1000;
    }
    time_t t = curl_getdate(v.c_str(), nullptr);
    if (t < 0) {
        return 0;
    }
    millis delta = static_cast<millis>(t) * 1000 - now_ms;
    return std::clamp<millis>(delta, 0, 24LL * 3600 * 1000);
}

// The envelope's `error` code, reduced to a safe token (never the message or the body).
std::string envelope_error_code(const std::string& body) {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    if (ec || !v.is_object()) {
        return {};
    }
    auto* e = v.as_object().if_contains("error");
    if (!e || !e->is_string()) {
        return {};
    }
    std::string code(e->as_string());
    if (code.size() > 64 || !std::all_of(code.begin(), code.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '-' || c == '.';
        })) {
        return {};
    }
    return code;
}

struct transfer {
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    std::string body;
    std::string response;
    std::string retry_after;
    run_start_callback done;
    char errbuf[CURL_ERROR_SIZE] = {};

    ~transfer() {
        if (headers) {
            curl_slist_free_all(headers);
        }
        if (easy) {
            curl_easy_cleanup(easy);
        }
    }
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    std::size_t len = size * n;
    if (t->response.size() < max_response_bytes) {
        t->response.append(data, std::min(len, max_response_bytes - t->response.size()));
    }
    return len;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    std::size_t len = size * n;
    std::string_view line(data, len);
    auto colon = line.find(':');
    if (colon != std::string_view::npos) {
        std::string name(line.substr(0, colon));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (name == "retry-after") {
            t->retry_after = trim(line.substr(colon + 1));
        }
    }
    return len;
}

class upstream_run_starter final : public run_starter {
public:
    explicit upstream_run_starter(upstream_options opts) : opts_(std::move(opts)) {
        static std::once_flag once;
        std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
        while (!opts_.base_url.empty() && opts_.base_url.back() == '/') {
            opts_.base_url.pop_back();
        }
        multi_ = curl_multi_init();
        worker_ = std::thread([this] {
            name_this_thread("wb-upstream");
            run();
        });
    }

    ~upstream_run_starter() override {
        stop();
        curl_multi_cleanup(multi_);
    }

    run_start_result prepare(const run_start_request&) override {
        run_start_result r;
        std::lock_guard lock(mu_);
        if (stopping_) {
            r.outcome = run_start_result::kind::retry;
            r.reason = "run starter stopping";
        }
        return r; // the upstream host decides whether the workflow exists
    }

    void start(const run_start_request& req, run_start_callback done) override {
        run_start_result fail;
        fail.outcome = run_start_result::kind::retry;
        auto t = std::make_unique<transfer>();
        t->done = std::move(done);
        millis timeout = opts_.timeout_ms;
        if (req.deadline > 0) {
            millis left = req.deadline - wall_now_ms();
            if (left <= 0) {
                fail.reason = "attempt deadline passed";
                t->done(std::move(fail));
                return;
            }
            timeout = std::min(timeout, left);
        }
        if (!build(*t, req, timeout, fail)) {
            t->done(std::move(fail));
            return;
        }
        {
            std::lock_guard lock(mu_);
            if (!stopping_) {
                queue_.push_back(std::move(t));
            }
        }
        if (t) { // not queued: stopping
            fail.reason = "run starter stopping";
            t->done(std::move(fail));
            return;
        }
        curl_multi_wakeup(multi_);
    }

    bool starts_before_commit() const noexcept override { return true; }
    void set_lifecycle_sink(run_lifecycle_sink*) override {} // the upstream host owns the run's life

    void stop() override {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        curl_multi_wakeup(multi_);
        std::lock_guard join_lock(join_mu_);
        if (worker_.joinable()) {
            worker_.join();
        }
    }

    std::vector<std::string> workflow_ids() const override { return {}; }

private:
    upstream_options opts_;
    CURLM* multi_ = nullptr;
    std::mutex mu_;
    std::mutex join_mu_;
    std::deque<std::unique_ptr<transfer>> queue_;
    bool stopping_ = false;
    std::thread worker_;

    bool build(transfer& t, const run_start_request& req, millis timeout, run_start_result& fail) {
        boost::system::error_code ec;
        auto trigger = boost::json::parse(req.trigger_event_json, ec);
        if (ec) {
            fail.outcome = run_start_result::kind::permanent;
            fail.reason = "trigger event is not JSON";
            return false;
        }
        boost::json::object body;
        body["workflowId"] = req.workflow_id;
        boost::json::object inputs;
        inputs["trigger"] = std::move(trigger);
        body["inputs"] = std::move(inputs);
        if (!req.tenant.empty()) {
            body["tenantId"] = req.tenant;
        }
        boost::json::object meta;
        meta["subscriptionId"] = req.subscription_id;
        meta["deliveryId"] = req.delivery_id;
        meta["causationId"] = req.causation_event_id;
        body["metadata"] = std::move(meta);
        t.body = boost::json::serialize(body);

        t.easy = curl_easy_init();
        if (!t.easy) {
            fail.reason = "cannot create an HTTP transfer";
            return false;
        }
        const std::string url = opts_.base_url + "/v1/runs";
        if (!opts_.api_key.empty()) {
            t.headers = curl_slist_append(t.headers, ("Authorization: Bearer " + opts_.api_key).c_str());
        }
        t.headers = curl_slist_append(t.headers, ("Idempotency-Key: " + req.delivery_id).c_str());
        t.headers = curl_slist_append(t.headers, "Content-Type: application/json");
        t.headers = curl_slist_append(t.headers, "Accept: application/json");
        t.headers = curl_slist_append(t.headers, "Expect:");
        CURL* e = t.easy;
        curl_easy_setopt(e, CURLOPT_URL, url.c_str());
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, t.body.data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.body.size()));
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<millis>(timeout, 1)));
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max<millis>(timeout, 1)));
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf);
        curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
        return true;
    }

    static run_start_result classify(transfer& t, CURLcode rc) {
        run_start_result r;
        if (rc != CURLE_OK) {
            r.outcome = run_start_result::kind::retry;
            r.reason = rc == CURLE_OPERATION_TIMEDOUT ? "upstream request timed out"
                                                      : std::string("upstream unreachable: ") +
                                                            curl_easy_strerror(rc);
            return r;
        }
        long status = 0;
        curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
        const std::string code = envelope_error_code(t.response);
        const std::string described =
            "upstream answered " + std::to_string(status) + (code.empty() ? "" : " " + code);
        if (status >= 200 && status < 300) {
            boost::system::error_code ec;
            auto v = boost::json::parse(t.response, ec);
            const boost::json::value* id = (!ec && v.is_object()) ? v.as_object().if_contains("runId")
                                                                 : nullptr;
            if (id && id->is_string() && !id->as_string().empty()) {
                r.outcome = run_start_result::kind::started;
                r.upstream_run_id = std::string(id->as_string());
                return r;
            }
            // Safe to retry: the Idempotency-Key returns the same run.
            r.outcome = run_start_result::kind::retry;
            r.reason = "upstream answered " + std::to_string(status) + " without a runId";
            return r;
        }
        r.reason = described;
        if (status == 408 || status == 429 || status >= 500 ||
            (status == 409 && (code == "idempotency_in_flight" || code == "run_already_active"))) {
            r.outcome = run_start_result::kind::retry;
            r.retry_after_ms = parse_retry_after(t.retry_after, wall_now_ms());
            return r;
        }
        if (status >= 300 && status < 400) {
            r.reason += " (redirects are not followed)";
        }
        r.outcome = run_start_result::kind::permanent;
        return r;
    }

    void run() {
        std::map<CURL*, std::unique_ptr<transfer>> active;
        while (true) {
            {
                std::lock_guard lock(mu_);
                while (!queue_.empty()) {
                    auto t = std::move(queue_.front());
                    queue_.pop_front();
                    curl_multi_add_handle(multi_, t->easy);
                    active.emplace(t->easy, std::move(t));
                }
                if (stopping_ && active.empty()) {
                    break; // in-flight starts finished; later start() calls answer "stopping"
                }
            }
            int running = 0;
            curl_multi_perform(multi_, &running);
            int left = 0;
            while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
                if (msg->msg != CURLMSG_DONE) {
                    continue;
                }
                auto it = active.find(msg->easy_handle);
                if (it == active.end()) {
                    continue;
                }
                auto t = std::move(it->second);
                active.erase(it);
                run_start_result r = classify(*t, msg->data.result);
                curl_multi_remove_handle(multi_, t->easy);
                auto done = std::move(t->done);
                t.reset();
                done(std::move(r));
            }
            // Sleeps until socket activity, a libcurl timer, or curl_multi_wakeup (start/stop).
            curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
        }
    }
};

} // namespace

std::unique_ptr<run_starter> make_upstream_run_starter(upstream_options opts) {
    return std::make_unique<upstream_run_starter>(std::move(opts));
}

} // namespace wopbridge
