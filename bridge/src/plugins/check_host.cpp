#include "plugins/check_host.hpp"

#include "plugins/check_report.hpp"

#include <boost/json.hpp>

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace wopbridge::check_kit {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

wb_str str(std::string_view s) noexcept {
    return wb_str{s.data(), s.size()};
}

std::string view(wb_str s) {
    return s.data == nullptr ? std::string{} : std::string(s.data, s.size);
}

std::int64_t wall_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool http_reply::has_header(std::string_view name) const {
    return std::any_of(headers.begin(), headers.end(),
                       [&](const auto& h) { return h.first == name; });
}

checking_host::checking_host(int outcome_delay_ms) : outcome_delay_(outcome_delay_ms) {
    api_.struct_size = sizeof(wb_host_api);
    api_.abi_major = WOPBRIDGE_ABI_MAJOR;
    api_.abi_minor = WOPBRIDGE_ABI_MINOR;
    api_.log = [](wb_host* h, wb_log_level l, wb_str m) { self(h)->on_log(l, view(m)); };
    api_.now_ms = [](wb_host*) -> std::int64_t { return wall_ms(); };
    api_.random_bytes = [](wb_host*, std::uint8_t* out, std::size_t n) -> wb_status {
        return fill_random(out, n) ? WB_OK : WB_ERR_INTERNAL;
    };
    api_.submit = [](wb_host* h, const wb_inbound_event* e, wb_submit_done_fn done,
                     void* user) { return self(h)->on_submit(e, done, user); };
    api_.respond = [](wb_host* h, wb_request_ctx* ctx, const wb_http_response* r) {
        return self(h)->on_respond(ctx, r);
    };
    api_.register_subscription = [](wb_host* h, const wb_subscription_request*, char* buf,
                                    std::size_t size) {
        self(h)->note_call("register_subscription");
        const std::string_view msg = "the conformance kit does not register subscriptions";
        if (buf != nullptr && size > 0) {
            const std::size_t n = std::min(size - 1, msg.size());
            std::memcpy(buf, msg.data(), n);
            buf[n] = '\0';
        }
        return WB_ERR_UNSUPPORTED;
    };
    api_.post_task = [](wb_host* h, std::int64_t delay, wb_task_fn fn, void* user) {
        return self(h)->on_post_task(delay, fn, user);
    };
    api_.has_capacity = [](wb_host*) { return 1; };
    api_.store_attachment = [](wb_host* h, wb_str bytes, char* buf, std::size_t size) {
        return self(h)->on_store_attachment(view(bytes), buf, size);
    };
    worker_ = std::thread([this] { run_worker(); });
}

checking_host::~checking_host() {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
        flush_ = true;
    }
    cv_.notify_all();
    worker_.join();
    if (!attachment_dir_.empty()) {
        std::error_code ec;
        fs::remove_all(attachment_dir_, ec);
    }
}

void checking_host::allow_subscription(const std::string& id) {
    std::lock_guard lk(mu_);
    subscribed_.insert(id);
}

void checking_host::forget_subscription(const std::string& id) {
    std::lock_guard lk(mu_);
    subscribed_.erase(id);
}

void checking_host::script_refusal(std::string reason, int retry_after) {
    std::lock_guard lk(mu_);
    refusal_ = std::move(reason);
    retry_after_ = retry_after;
}

http_reply checking_host::send(const wb_connector_descriptor* d, wb_connector* c,
                               const probe_request& p, const std::string& subscription_id,
                               std::int64_t received_at_ms, std::chrono::milliseconds timeout) {
    auto state = std::make_unique<request_state>();
    auto* ctx = reinterpret_cast<wb_request_ctx*>(state.get());
    request_state* rs = state.get();
    {
        std::lock_guard lk(mu_);
        requests_.emplace(ctx, std::move(state));
        current_ = rs;
    }
    std::vector<wb_header> headers;
    for (const auto& [n, v] : p.headers) {
        headers.push_back(wb_header{str(n), str(v)});
    }
    const std::string target =
        p.target.empty() ? "/v1/ingest/" + subscription_id : p.target;
    const std::string url = std::string(public_base) + target;
    wb_http_request req{};
    req.struct_size = sizeof(wb_http_request);
    req.subscription_id = str(subscription_id);
    req.method = str(p.method);
    req.target = str(target);
    req.public_url = str(url);
    req.headers = headers.data();
    req.header_count = headers.size();
    req.body = str(p.body);
    req.remote_address = str("192.0.2.10");
    req.received_at_ms = received_at_ms;
    const auto started = steady::now();
    d->on_http_request(c, ctx, &req);
    std::unique_lock lk(mu_);
    cv_.wait_until(lk, started + timeout, [&] { return rs->responded; });
    http_reply out = rs->reply;
    out.responded = rs->responded;
    out.submits = rs->submits;
    out.answered_before_outcome = rs->early;
    current_ = nullptr;
    // Let the outcomes of this request land before the next probe starts.
    cv_.wait_until(lk, steady::now() + timeout, [&] { return outstanding_ == 0; });
    return out;
}

bool checking_host::drain(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    flush_ = true;
    cv_.notify_all();
    const bool idle = cv_.wait_until(lk, steady::now() + timeout, [&] {
        return jobs_.empty() && !running_ && outstanding_ == 0;
    });
    flush_ = false;
    return idle;
}

void checking_host::mark_destroyed() {
    std::lock_guard lk(mu_);
    destroyed_ = true;
}

std::vector<submit_record> checking_host::submits() const {
    std::lock_guard lk(mu_);
    return submits_;
}

std::vector<std::string> checking_host::violations() const {
    std::lock_guard lk(mu_);
    return violations_;
}

std::vector<std::string> checking_host::error_logs() const {
    std::lock_guard lk(mu_);
    return error_logs_;
}

bool checking_host::fill_random(std::uint8_t* out, std::size_t n) {
    if (out == nullptr && n > 0) {
        return false;
    }
    std::size_t off = 0;
    while (off < n) {
        const ssize_t got = ::getrandom(out + off, n - off, 0);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        off += static_cast<std::size_t>(got);
    }
    return true;
}

void checking_host::violation(std::string what) {
    // Called with mu_ held.
    if (violations_.size() < 32) {
        violations_.push_back(one_line(what, 200));
    }
}

void checking_host::note_call(const char* what) {
    std::lock_guard lk(mu_);
    if (destroyed_) {
        violation(std::string("host API ") + what + " called after destroy");
    }
}

void checking_host::on_log(wb_log_level level, const std::string& message) {
    std::lock_guard lk(mu_);
    if (destroyed_) {
        violation("host API log called after destroy");
    }
    if (level >= WB_LOG_ERROR && error_logs_.size() < 16) {
        error_logs_.push_back(one_line(message, 160));
    }
}

void checking_host::schedule(std::int64_t delay_ms, std::function<void()> fn) {
    // Called with mu_ held.
    const auto due = steady::now() + std::chrono::milliseconds(std::max<std::int64_t>(
                                         0, std::min<std::int64_t>(delay_ms, 86'400'000)));
    jobs_.emplace(std::make_pair(due, seq_++), job{std::move(fn)});
    cv_.notify_all();
}

wb_status checking_host::on_submit(const wb_inbound_event* e, wb_submit_done_fn done, void* user) {
    std::lock_guard lk(mu_);
    if (destroyed_) {
        violation("submit called after destroy");
        return WB_ERR_STATE;
    }
    if (e == nullptr || done == nullptr) {
        violation("submit with a null event or completion");
        return WB_ERR_INVALID;
    }
    if (e->struct_size < sizeof(wb_inbound_event)) {
        violation("submit with a short wb_inbound_event struct_size");
        return WB_ERR_INVALID;
    }
    const std::string sub = view(e->subscription_id);
    const std::string pid = view(e->provider_event_id);
    if (subscribed_.count(sub) == 0) {
        violation("submit for subscription '" + one_line(sub, 64) +
                  "' the instance was not handed");
        return WB_ERR_INVALID;
    }
    if (pid.empty()) {
        violation("submit with an empty provider_event_id");
        return WB_ERR_INVALID;
    }
    boost::system::error_code ec;
    const auto content = boost::json::parse(view(e->content_json), ec);
    if (ec || !content.is_object() || content.as_object().size() != 1) {
        violation("submit whose content_json is not a JSON object with exactly one key");
        return WB_ERR_INVALID;
    }
    submit_record rec;
    rec.subscription_id = sub;
    rec.provider_event_id = pid;
    rec.verified = e->verified != 0;
    wb_submit_status status = WB_SUBMIT_ACCEPTED;
    std::string run_id;
    std::string reason = refusal_;
    const int retry_after = refusal_.empty() ? 0 : retry_after_;
    if (!refusal_.empty()) {
        status = WB_SUBMIT_REFUSED; // nothing committed, nothing remembered
    } else if (auto it = dedup_.find({sub, pid}); it != dedup_.end()) {
        status = WB_SUBMIT_DUPLICATE;
        run_id = it->second;
    } else {
        run_id = "run_kit_" + std::to_string(dedup_.size() + 1);
        dedup_.emplace(std::make_pair(sub, pid), run_id);
    }
    rec.outcome = status;
    submits_.push_back(rec);
    request_state* rs = current_ != nullptr && !current_->responded ? current_ : nullptr;
    if (rs != nullptr) {
        ++rs->pending_outcomes;
        ++rs->submits;
    }
    ++outstanding_;
    const std::string delivery = "dlv_kit_" + std::to_string(submits_.size());
    schedule(outcome_delay_, [this, rs, done, user, status, run_id, delivery, reason,
                              retry_after] {
        {
            std::lock_guard lk(mu_);
            if (rs != nullptr) {
                --rs->pending_outcomes;
            }
        }
        wb_submit_outcome o{};
        o.struct_size = sizeof(wb_submit_outcome);
        o.status = status;
        if (status != WB_SUBMIT_REFUSED) {
            o.run_id = str(run_id);
            o.delivery_id = str(delivery);
        }
        o.reason = str(reason);
        o.retry_after_seconds = retry_after;
        done(user, &o);
        {
            std::lock_guard lk(mu_);
            --outstanding_;
        }
        cv_.notify_all();
    });
    return WB_OK;
}

wb_status checking_host::on_respond(wb_request_ctx* ctx, const wb_http_response* r) {
    std::lock_guard lk(mu_);
    if (destroyed_) {
        violation("respond called after destroy");
    }
    auto it = requests_.find(ctx);
    if (it == requests_.end()) {
        violation("respond for an unknown request ctx");
        return WB_ERR_INVALID;
    }
    request_state& rs = *it->second;
    if (rs.responded) {
        violation("respond called twice for one request");
        return WB_ERR_STATE;
    }
    rs.responded = true;
    rs.reply.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              steady::now() - rs.started)
                              .count();
    if (rs.pending_outcomes > 0) {
        rs.early = true;
        violation("responded before the submit outcome arrived (answer only after commit)");
    }
    if (r == nullptr || r->struct_size < sizeof(wb_http_response)) {
        violation("respond with a null or short wb_http_response");
        rs.reply.status = 500;
    } else {
        rs.reply.status = r->status;
        if (r->status < 100 || r->status > 599) {
            violation("respond with HTTP status " + std::to_string(r->status));
        }
        for (std::size_t i = 0; i < r->header_count && r->headers != nullptr; ++i) {
            std::string n = view(r->headers[i].name);
            const std::string v = view(r->headers[i].value);
            if (n.find_first_of("\r\n") != std::string::npos ||
                v.find_first_of("\r\n") != std::string::npos) {
                violation("respond with a header containing CR/LF");
            }
            std::transform(n.begin(), n.end(), n.begin(),
                           [](unsigned char ch) { return std::tolower(ch); });
            rs.reply.headers.emplace_back(std::move(n), v);
        }
        rs.reply.body = view(r->body);
    }
    cv_.notify_all();
    return WB_OK;
}

wb_status checking_host::on_post_task(std::int64_t delay_ms, wb_task_fn fn, void* user) {
    std::lock_guard lk(mu_);
    if (destroyed_) {
        violation("post_task called after destroy");
        return WB_ERR_STATE;
    }
    if (fn == nullptr) {
        violation("post_task with a null function");
        return WB_ERR_INVALID;
    }
    schedule(delay_ms, [fn, user] { fn(user); });
    return WB_OK;
}

wb_status checking_host::on_store_attachment(const std::string& bytes, char* buf,
                                             std::size_t size) {
    std::array<std::uint8_t, 12> rnd{};
    if (!fill_random(rnd.data(), rnd.size())) {
        return WB_ERR_INTERNAL;
    }
    std::string ref = "att_";
    static constexpr char hex[] = "0123456789abcdef";
    for (auto b : rnd) {
        ref += hex[b >> 4];
        ref += hex[b & 0xf];
    }
    if (buf == nullptr || size < ref.size() + 1) {
        return WB_ERR_INVALID;
    }
    fs::path file;
    {
        std::lock_guard lk(mu_);
        if (destroyed_) {
            violation("store_attachment called after destroy");
            return WB_ERR_STATE;
        }
        if (attachment_dir_.empty()) {
            std::string tmpl = (fs::temp_directory_path() / "wopbridge-kit-XXXXXX").string();
            if (::mkdtemp(tmpl.data()) == nullptr) {
                return WB_ERR_INTERNAL;
            }
            attachment_dir_ = tmpl;
        }
        file = attachment_dir_ / ref;
    }
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return WB_ERR_INTERNAL;
    }
    std::size_t off = 0;
    bool ok = true;
    while (off < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
        if (n <= 0) {
            ok = false;
            break;
        }
        off += static_cast<std::size_t>(n);
    }
    ok = ok && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) {
        return WB_ERR_INTERNAL;
    }
    std::memcpy(buf, ref.c_str(), ref.size() + 1);
    return WB_OK;
}

void checking_host::run_worker() {
    std::unique_lock lk(mu_);
    for (;;) {
        if (jobs_.empty()) {
            if (stopping_) {
                return;
            }
            cv_.wait(lk);
            continue;
        }
        auto it = jobs_.begin();
        if (!flush_ && it->first.first > steady::now()) {
            cv_.wait_until(lk, it->first.first);
            continue;
        }
        auto fn = std::move(it->second.fn);
        jobs_.erase(it);
        running_ = true;
        lk.unlock();
        fn();
        lk.lock();
        running_ = false;
        cv_.notify_all();
    }
}

} // namespace wopbridge::check_kit
