#include "outbound/webhook_dispatcher.hpp"
#include "core/thread_name.hpp"

#include "contract/retry_schedule.hpp"
#include "core/ids.hpp"
#include "core/log.hpp"
#include "core/synchronized_random.hpp"
#include "outbound/delivery_request.hpp"
#include "outbound/url_policy.hpp"

#include <wopbridge/signatures.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <ctime>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

namespace wopbridge::outbound {
namespace {

constexpr std::size_t max_response_bytes = 64 * 1024; // read and discarded

// A registered URL with a query or fragment (where subscribers put tokens) is sealed at rest like the
// secrets, so a copy of the database alone does not reveal it. Sealed text starts "v1:", which no
// accepted (http/https) URL does; rows stored in clear read as they are.
bool url_may_carry_token(const std::string& url) {
    return url.find_first_of("?#") != std::string::npos;
}

result<std::string> open_url(const secret_box& box, const std::string& stored) {
    if (!stored.starts_with("v1:")) {
        return stored;
    }
    return box.unseal(stored);
}

// For reads: the URL as registered, or "" when it cannot be opened (the host key changed).
std::string readable_url(const secret_box& box, const std::string& stored) {
    auto url = open_url(box, stored);
    return url ? std::move(*url) : std::string();
}

size_t discard_body(char*, size_t size, size_t n, void* user) {
    auto* total = static_cast<std::size_t*>(user);
    *total += size * n;
    return *total > max_response_bytes ? 0 : size * n;
}

std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.pop_back();
    }
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
        ++i;
    }
    return s.substr(i);
}

size_t capture_retry_after(char* data, size_t size, size_t n, void* user) {
    std::string line(data, size * n);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (name == "retry-after") {
            *static_cast<std::string*>(user) = trim(line.substr(colon + 1));
        }
    }
    return size * n;
}

millis retry_after_ms(const std::string& v) {
    if (v.empty()) {
        return 0;
    }
    if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); })) {
        return std::min<millis>(std::stoll(v.substr(0, 9)), 24 * 3600) * 1000;
    }
    time_t t = curl_getdate(v.c_str(), nullptr);
    if (t < 0) {
        return 0;
    }
    return std::max<millis>(0, (static_cast<millis>(t) - std::time(nullptr)) * 1000);
}

bool valid_event_type(const std::string& t) {
    static const std::regex pattern("^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)+$");
    return t.size() <= 128 && std::regex_match(t, pattern);
}

struct curl_global {
    curl_global() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

} // namespace

struct webhook_dispatcher::impl {
    store& st;
    secret_box box;
    clock_source& clock;
    synchronized_random random;
    dispatcher_options opts;
    CURLM* multi = nullptr;

    struct transfer {
        CURL* easy = nullptr;
        curl_slist* headers = nullptr;
        curl_slist* resolve = nullptr;
        outbound_delivery d;
        std::string body;
        std::string retry_after;
        std::size_t response_bytes = 0;
        bool probe = false;
    };
    std::map<CURL*, std::unique_ptr<transfer>> active; // worker thread (or run_due) only
    std::set<std::string> probing;                     // webhooks with a half-open probe in flight

    std::thread worker;
    std::atomic<bool> stopping{false};
    std::mutex lifecycle_mu;
    bool started = false;

    impl(store& s, secret_box b, clock_source& c, random_source& r, dispatcher_options o)
        : st(s), box(std::move(b)), clock(c), random(r), opts(std::move(o)) {
        static curl_global global;
        multi = curl_multi_init();
    }

    ~impl() {
        for (auto& [easy, t] : active) {
            curl_multi_remove_handle(multi, easy);
            release(*t);
        }
        active.clear();
        curl_multi_cleanup(multi);
    }

    static void release(transfer& t) {
        curl_easy_cleanup(t.easy);
        curl_slist_free_all(t.headers);
        curl_slist_free_all(t.resolve);
    }

    // ---- outcomes -------------------------------------------------------------------------------

    void record(const outbound_attempt& a) {
        auto r = st.record_outbound_attempt(a);
        if (!r && r.error() != make_error_code(errc::not_found)) {
            log_line("error", "outbound.record_failed",
                     {{"webhookId", a.webhook_id}, {"deliveryId", a.delivery_id}});
        }
        if (a.state_change) {
            log_line("warn", "outbound.webhook.state_changed",
                     {{"webhookId", a.webhook_id},
                      {"toState", std::string(to_string(a.state_change->to))},
                      {"reason", a.state_change->reason}});
        }
    }

    void record_skip(const outbound_delivery& d, const outbound_webhook& w, millis now) {
        outbound_attempt a;
        a.delivery_id = d.id;
        a.webhook_id = d.webhook_id;
        a.at = now;
        a.status = "skipped";
        a.counted_attempt = false;
        a.error = "breaker-open";
        a.consecutive_failures = w.consecutive_failures;
        a.breaker_open_until = w.breaker_open_until;
        record(a);
    }

    void complete(const outbound_delivery& d, bool delivered, const std::string& error,
                  millis retry_after, bool probe, millis now) {
        if (probe) {
            probing.erase(d.webhook_id);
        }
        auto w = st.get_outbound_webhook(d.webhook_id); // fresh: the breaker counters
        if (!w) {
            return; // deleted meanwhile: its outbox went with it
        }
        outbound_attempt a;
        a.delivery_id = d.id;
        a.webhook_id = d.webhook_id;
        a.at = now;
        a.error = delivered ? std::string() : error;
        if (delivered) {
            a.status = "delivered";
            a.consecutive_failures = 0;
            a.breaker_open_until = 0;
            record(a);
            return;
        }
        a.failure = true;
        a.consecutive_failures = w->consecutive_failures + 1;
        if (opts.durable) {
            a.breaker_open_until = 0;
            int attempts = d.attempts + 1;
            if (attempts >= std::max(1, opts.retry.max_attempts)) {
                a.status = "dead_lettered";
                a.dead_letter_expires_at =
                    now + static_cast<millis>(opts.dead_letter_retention_days) * 86400 * 1000;
                if (w->state == sub_state::active) {
                    a.state_change = outbound_state_change{w->id, sub_state::active,
                                                           sub_state::dead_lettered,
                                                           "retry-exhausted", now};
                }
            } else {
                a.status = "pending";
                a.next_due_at = now + retry_delay(opts.retry, attempts, retry_after, &random);
            }
            record(a);
            return;
        }
        a.status = "failed";
        bool open = probe || a.consecutive_failures >= opts.breaker_threshold;
        a.breaker_open_until = open ? now + opts.breaker_open_ms : 0;
        auto failures = st.count_outbound_failures(w->id, now - opts.failure_window_ms + 1);
        int total = (failures ? *failures : 0) + 1;
        if (total >= opts.failure_window_limit && w->state == sub_state::active) {
            a.state_change = outbound_state_change{w->id, sub_state::active, sub_state::failed,
                                                   "failure-threshold", now};
        }
        record(a);
    }

    // ---- sending --------------------------------------------------------------------------------

    // Returns true when a transfer was started; false when the delivery was settled at once.
    bool begin(const outbound_delivery& d, millis now) {
        auto w = st.get_outbound_webhook(d.webhook_id);
        if (!w) {
            return false;
        }
        bool probe = false;
        if (!opts.durable && w->breaker_open_until != 0) {
            if (w->breaker_open_until > now || probing.count(w->id) != 0) {
                record_skip(d, *w, now);
                return false;
            }
            probe = true; // half-open: this one delivery probes
            probing.insert(w->id);
        }
        auto fail = [&](const std::string& why) {
            complete(d, false, why, 0, probe, now);
            return false;
        };
        auto events = st.run_events_after(d.run_id, d.sequence - 1, 1);
        auto run = st.get_run(d.run_id);
        if (!events || events->empty() || events->front().sequence != d.sequence || !run) {
            return fail("event-unavailable");
        }
        auto secret = box.unseal(w->sealed_secret);
        if (!secret) {
            return fail("secret-unavailable");
        }
        std::string standard;
        if (!w->sealed_standard_secret.empty()) {
            if (auto s = box.unseal(w->sealed_standard_secret)) {
                standard = *s;
            }
        }
        auto url = open_url(box, w->url);
        if (!url) {
            return fail("url-unavailable");
        }
        w->url = std::move(*url);
        auto target = check_webhook_url(w->url, opts.allow_loopback_http);
        if (!target) {
            return fail("address-refused");
        }
        auto address = resolve_validated(*target, opts.allow_loopback_http);
        if (!address) {
            return fail(address.error().message);
        }

        auto t = std::make_unique<transfer>();
        t->d = d;
        t->probe = probe;
        t->body = delivery_body(run->tenant, events->front());
        signing_input in;
        in.webhook_id = w->id;
        in.event_type = d.event_type;
        in.delivery_id = d.id;
        in.timestamp_s = now / 1000;
        in.secret = *secret;
        in.standard_secret = standard;
        in.version = opts.version;
        for (const auto& [name, value] : delivery_headers(in, t->body)) {
            t->headers = curl_slist_append(t->headers, (name + ": " + value).c_str());
        }
        t->headers = curl_slist_append(t->headers, "Expect:");
        if (!target->host_is_ip) {
            // Pin the connection to the address just validated (no second resolution).
            std::string pinned = address->find(':') != std::string::npos ? "[" + *address + "]"
                                                                         : *address;
            t->resolve = curl_slist_append(
                nullptr,
                (target->host + ":" + std::to_string(target->port) + ":" + pinned).c_str());
        }
        CURL* e = curl_easy_init();
        t->easy = e;
        curl_easy_setopt(e, CURLOPT_URL, w->url.c_str());
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(t->body.size()));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.data());
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
        if (t->resolve != nullptr) {
            curl_easy_setopt(e, CURLOPT_RESOLVE, t->resolve);
        }
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(opts.attempt_timeout_ms));
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts.attempt_timeout_ms));
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &t->response_bytes);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, capture_retry_after);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &t->retry_after);
        curl_multi_add_handle(multi, e);
        active.emplace(e, std::move(t));
        return true;
    }

    void finish(CURL* easy, CURLcode code, millis now) {
        auto it = active.find(easy);
        if (it == active.end()) {
            return;
        }
        auto t = std::move(it->second);
        active.erase(it);
        curl_multi_remove_handle(multi, easy);
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        bool delivered = code == CURLE_OK && status >= 200 && status < 300;
        std::string error;
        if (code == CURLE_OPERATION_TIMEDOUT) {
            error = "timeout";
        } else if (code == CURLE_WRITE_ERROR && status >= 200 && status < 300) {
            delivered = true; // an oversized 2xx answer body is still an acknowledgement
        } else if (code == CURLE_COULDNT_CONNECT) {
            error = "connect-failed";
        } else if (code != CURLE_OK && status == 0) {
            error = "transport-error";
        } else if (!delivered) {
            error = "http-" + std::to_string(status); // 3xx included: redirects are not followed
        }
        millis after = (status == 429 || status == 503) ? retry_after_ms(t->retry_after) : 0;
        complete(t->d, delivered, error, after, t->probe, now);
        release(*t);
    }

    // One round: claim what is due (when `claim`), drive the transfers, settle the finished ones.
    // Returns {settled, claimed}.
    std::pair<int, int> pump(millis now, bool claim, int poll_ms) {
        int settled = 0;
        int claimed = 0;
        int room = opts.max_in_flight - static_cast<int>(active.size());
        if (claim && room > 0) {
            auto due = st.claim_outbound_due(now, room, std::max(1, opts.per_webhook_in_flight),
                                             opts.lease_ms);
            if (due) {
                claimed = static_cast<int>(due->size());
                for (const auto& d : *due) {
                    if (!begin(d, now)) {
                        ++settled;
                    }
                }
            }
        }
        int running = 0;
        curl_multi_perform(multi, &running);
        int left = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
            if (msg->msg == CURLMSG_DONE) {
                finish(msg->easy_handle, msg->data.result, now);
                ++settled;
            }
        }
        if (poll_ms > 0) {
            curl_multi_poll(multi, nullptr, 0, poll_ms, nullptr);
        }
        return {settled, claimed};
    }

    void run_worker() {
        while (!stopping.load() || !active.empty()) {
            millis now = clock.now_ms();
            int wait = 1000;
            bool due = false;
            // A cheap read first: the claim is a write transaction (an fsync), so only when due.
            if (auto next = st.outbound_next_due_at(); next && *next) {
                wait = static_cast<int>(std::clamp<millis>(**next - now, 0, 1000));
                due = **next <= now;
            }
            auto [settled, claimed] = pump(now, due && !stopping.load(), 0);
            (void)settled;
            if (claimed == 0 || active.size() >= static_cast<std::size_t>(opts.max_in_flight)) {
                curl_multi_poll(multi, nullptr, 0, active.empty() ? std::max(wait, 10) : 50,
                                nullptr);
            }
        }
    }
};

webhook_dispatcher::webhook_dispatcher(store& st, secret_box box, clock_source& clock,
                                       random_source& random, dispatcher_options opts)
    : impl_(std::make_unique<impl>(st, std::move(box), clock, random, std::move(opts))) {}

webhook_dispatcher::~webhook_dispatcher() { stop(); }

const dispatcher_options& webhook_dispatcher::options() const noexcept { return impl_->opts; }

result<webhook_registered, registration_error>
webhook_dispatcher::register_webhook(const webhook_registration& req) {
    auto& m = *impl_;
    auto refuse = [](std::string field, std::string message) {
        return registration_error{make_error_code(errc::invalid_argument), std::move(field),
                                  std::move(message)};
    };
    if (req.tenant.empty()) {
        return refuse("tenant", "tenant is required");
    }
    if (req.events.empty()) {
        return refuse("events", "events must be a non-empty array of run event types");
    }
    for (const auto& e : req.events) {
        if (!valid_event_type(e)) {
            return refuse("events", "events must hold run event types");
        }
    }
    if (req.url.size() > 2048) {
        return refuse("url", "url is too long");
    }
    if (auto target = check_webhook_url(req.url, m.opts.allow_loopback_http); !target) {
        return refuse("url", target.error().message);
    }
    if (!req.standard_secret.empty()) {
        auto key = req.standard_secret.starts_with("whsec_")
                       ? sig::base64_decode(std::string_view(req.standard_secret).substr(6))
                       : std::nullopt;
        if (!key || key->size() < 24 || key->size() > 64) {
            return refuse("secret", "secret must be a whsec_ secret of 24 to 64 bytes");
        }
    }
    unsigned char raw[32];
    m.random.fill(raw, sizeof raw);
    webhook_registered out;
    out.secret = sig::to_hex(std::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
    auto& w = out.record;
    w.id = id_generator(m.random).make("wh");
    w.tenant = req.tenant;
    w.url = req.url;
    w.events = req.events;
    std::sort(w.events.begin(), w.events.end());
    w.events.erase(std::unique(w.events.begin(), w.events.end()), w.events.end());
    w.tags = req.tags;
    w.sealed_secret = m.box.seal(out.secret, m.random);
    if (!req.standard_secret.empty()) {
        w.sealed_standard_secret = m.box.seal(req.standard_secret, m.random);
    }
    w.secret_fingerprint = secret_fingerprint(out.secret);
    w.state = sub_state::active;
    w.created_at = w.updated_at = m.clock.now_ms();
    auto stored = w;
    if (url_may_carry_token(w.url)) {
        stored.url = m.box.seal(w.url, m.random);
    }
    if (auto r = m.st.insert_outbound_webhook(stored); !r) {
        return registration_error{r.error(), {}, r.error().message()};
    }
    log_line("info", "outbound.webhook.registered",
             {{"webhookId", w.id}, {"secretFingerprint", w.secret_fingerprint}});
    return out;
}

result<std::vector<outbound_webhook>> webhook_dispatcher::list(const std::string& tenant) {
    auto all = impl_->st.list_outbound_webhooks(tenant);
    if (all) {
        for (auto& w : *all) {
            w.url = readable_url(impl_->box, w.url);
        }
    }
    return all;
}

result<outbound_webhook> webhook_dispatcher::get(const std::string& tenant, const std::string& id) {
    auto w = impl_->st.get_outbound_webhook(id);
    if (w && w->tenant != tenant) {
        return make_error_code(errc::not_found);
    }
    if (w) {
        w->url = readable_url(impl_->box, w->url);
    }
    return w;
}

result<void> webhook_dispatcher::remove(const std::string& tenant, const std::string& id) {
    auto w = get(tenant, id);
    if (!w) {
        return w.error();
    }
    return impl_->st.delete_outbound_webhook(id);
}

result<page<outbound_dead_letter>> webhook_dispatcher::dead_letters(const std::string& tenant,
                                                                    const std::string& id,
                                                                    const page_request& req) {
    auto w = get(tenant, id);
    if (!w) {
        return w.error();
    }
    return impl_->st.list_outbound_dead_letters(id, req, impl_->clock.now_ms());
}

result<std::vector<outbound_state_change>> webhook_dispatcher::state_changes(
    const std::string& tenant, const std::string& id) {
    auto w = get(tenant, id);
    if (!w) {
        return w.error();
    }
    return impl_->st.list_outbound_state_changes(id);
}

void webhook_dispatcher::on_run_event(const run_event&) { curl_multi_wakeup(impl_->multi); }

void webhook_dispatcher::start() {
    std::lock_guard lock(impl_->lifecycle_mu);
    if (impl_->started) {
        return;
    }
    impl_->started = true;
    impl_->stopping = false;
    impl_->worker = std::thread([this] {
        name_this_thread("wb-outbound");
        impl_->run_worker();
    });
}

void webhook_dispatcher::stop() {
    std::lock_guard lock(impl_->lifecycle_mu);
    if (!impl_->started) {
        return;
    }
    impl_->stopping = true;
    curl_multi_wakeup(impl_->multi);
    impl_->worker.join();
    impl_->started = false;
}

int webhook_dispatcher::run_due(millis now) {
    auto& m = *impl_;
    int settled = 0;
    for (;;) {
        // Done only after a round that started idle and found nothing due: a round that settles
        // transfers frees per-webhook slots for deliveries the previous claim had to leave.
        bool idle = m.active.empty();
        auto [s, claimed] = m.pump(now, true, idle ? 0 : 20);
        settled += s;
        if (idle && claimed == 0 && m.active.empty()) {
            return settled;
        }
    }
}

} // namespace wopbridge::outbound
