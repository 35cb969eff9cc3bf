#include "plugins/connector_check.hpp"

#include "contract/json_schema.hpp"
#include "plugins/module_loader.hpp"

#include "wopbridge/connector.h"

#include <boost/json.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace wopbridge {
namespace {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

constexpr std::string_view kit_subscription = "kit-sub-1";
constexpr std::string_view public_base = "https://bridge.example.com";

// One line, printable, bounded: reasons may quote module output.
std::string one_line(std::string_view text, std::size_t max = 400) {
    std::string out;
    out.reserve(std::min(text.size(), max));
    for (char c : text) {
        if (out.size() >= max) {
            out += "...";
            break;
        }
        out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    return out;
}

std::string status_name(int st) {
    switch (st) {
    case WB_OK:
        return "WB_OK";
    case WB_ERR_INVALID:
        return "WB_ERR_INVALID";
    case WB_ERR_UNSUPPORTED:
        return "WB_ERR_UNSUPPORTED";
    case WB_ERR_INTERNAL:
        return "WB_ERR_INTERNAL";
    case WB_ERR_BUSY:
        return "WB_ERR_BUSY";
    case WB_ERR_STATE:
        return "WB_ERR_STATE";
    default:
        return "status " + std::to_string(st);
    }
}

std::string buf_text(const std::array<char, 512>& buf) {
    return one_line(std::string_view(buf.data(), ::strnlen(buf.data(), buf.size())));
}

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

// ---- reporting from a phase (runs in the child; lines go up a pipe) -----------------------------

class reporter {
  public:
    explicit reporter(int fd) : fd_(fd) {}
    // Names the check about to call into the module, so a crash can be blamed on it.
    void begin(std::string_view name) { write("B\t" + std::string(name) + "\n"); }
    void report(check_result r, std::string_view name, std::string_view reason) {
        write("R\t" + std::string(to_string(r)) + "\t" + std::string(name) + "\t" +
              one_line(reason) + "\n");
    }
    void pass(std::string_view n, std::string_view why) { report(check_result::pass, n, why); }
    void fail(std::string_view n, std::string_view why) { report(check_result::fail, n, why); }
    void skip(std::string_view n, std::string_view why) { report(check_result::skip, n, why); }

  private:
    void write(const std::string& line) {
        std::size_t off = 0;
        while (off < line.size()) {
            const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
            if (n <= 0) {
                return;
            }
            off += static_cast<std::size_t>(n);
        }
    }
    int fd_;
};

// ---- the checking host --------------------------------------------------------------------------

struct submit_record {
    std::string subscription_id;
    std::string provider_event_id;
    bool verified = false;
    wb_submit_status outcome = WB_SUBMIT_REFUSED;
};

struct http_reply {
    bool responded = false;
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::int64_t elapsed_ms = 0;
    std::size_t submits = 0;           // submits made while the request was open
    bool answered_before_outcome = false;

    bool has_header(std::string_view name) const {
        return std::any_of(headers.begin(), headers.end(),
                           [&](const auto& h) { return h.first == name; });
    }
};

// A real wb_host_api implementation that records what the module does and flags what the ABI
// forbids. Outcomes are delivered late on a worker thread, so answering before the commit shows.
class checking_host {
  public:
    explicit checking_host(int outcome_delay_ms) : outcome_delay_(outcome_delay_ms) {
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

    ~checking_host() {
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

    checking_host(const checking_host&) = delete;
    checking_host& operator=(const checking_host&) = delete;

    const wb_host_api* api() const noexcept { return &api_; }
    wb_host* handle() noexcept { return reinterpret_cast<wb_host*>(this); }

    void allow_subscription(const std::string& id) {
        std::lock_guard lk(mu_);
        subscribed_.insert(id);
    }
    void forget_subscription(const std::string& id) {
        std::lock_guard lk(mu_);
        subscribed_.erase(id);
    }
    // Every following submit is refused with `reason` (empty = back to accept/dedup).
    void script_refusal(std::string reason, int retry_after) {
        std::lock_guard lk(mu_);
        refusal_ = std::move(reason);
        retry_after_ = retry_after;
    }

    http_reply send(const wb_connector_descriptor* d, wb_connector* c, const probe_request& p,
                    const std::string& subscription_id, std::int64_t received_at_ms,
                    std::chrono::milliseconds timeout) {
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

    // What stop() promises: tasks still queued run now, outcomes are delivered, then idle.
    bool drain(std::chrono::milliseconds timeout) {
        std::unique_lock lk(mu_);
        flush_ = true;
        cv_.notify_all();
        const bool idle = cv_.wait_until(lk, steady::now() + timeout, [&] {
            return jobs_.empty() && !running_ && outstanding_ == 0;
        });
        flush_ = false;
        return idle;
    }

    void mark_destroyed() {
        std::lock_guard lk(mu_);
        destroyed_ = true;
    }

    std::vector<submit_record> submits() const {
        std::lock_guard lk(mu_);
        return submits_;
    }
    std::vector<std::string> violations() const {
        std::lock_guard lk(mu_);
        return violations_;
    }
    std::vector<std::string> error_logs() const {
        std::lock_guard lk(mu_);
        return error_logs_;
    }

  private:
    struct request_state {
        bool responded = false;
        bool early = false;
        int pending_outcomes = 0;
        std::size_t submits = 0;
        steady::time_point started = steady::now();
        http_reply reply;
    };

    struct job {
        std::function<void()> fn;
    };

    static checking_host* self(wb_host* h) noexcept { return reinterpret_cast<checking_host*>(h); }

    static bool fill_random(std::uint8_t* out, std::size_t n) {
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

    void violation(std::string what) {
        // Called with mu_ held.
        if (violations_.size() < 32) {
            violations_.push_back(one_line(what, 200));
        }
    }

    void note_call(const char* what) {
        std::lock_guard lk(mu_);
        if (destroyed_) {
            violation(std::string("host API ") + what + " called after destroy");
        }
    }

    void on_log(wb_log_level level, const std::string& message) {
        std::lock_guard lk(mu_);
        if (destroyed_) {
            violation("host API log called after destroy");
        }
        if (level >= WB_LOG_ERROR && error_logs_.size() < 16) {
            error_logs_.push_back(one_line(message, 160));
        }
    }

    void schedule(std::int64_t delay_ms, std::function<void()> fn) {
        // Called with mu_ held.
        const auto due = steady::now() + std::chrono::milliseconds(std::max<std::int64_t>(
                                             0, std::min<std::int64_t>(delay_ms, 86'400'000)));
        jobs_.emplace(std::make_pair(due, seq_++), job{std::move(fn)});
        cv_.notify_all();
    }

    wb_status on_submit(const wb_inbound_event* e, wb_submit_done_fn done, void* user) {
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

    wb_status on_respond(wb_request_ctx* ctx, const wb_http_response* r) {
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

    wb_status on_post_task(std::int64_t delay_ms, wb_task_fn fn, void* user) {
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

    wb_status on_store_attachment(const std::string& bytes, char* buf, std::size_t size) {
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

    void run_worker() {
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

    wb_host_api api_{};
    const int outcome_delay_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::thread worker_;
    std::map<std::pair<steady::time_point, std::uint64_t>, job> jobs_;
    std::uint64_t seq_ = 0;
    bool running_ = false;
    bool flush_ = false;
    bool stopping_ = false;
    bool destroyed_ = false;
    int outstanding_ = 0;
    std::set<std::string> subscribed_;
    std::map<std::pair<std::string, std::string>, std::string> dedup_;
    std::string refusal_;
    int retry_after_ = 0;
    std::map<wb_request_ctx*, std::unique_ptr<request_state>> requests_;
    request_state* current_ = nullptr;
    std::vector<submit_record> submits_;
    std::vector<std::string> violations_;
    std::vector<std::string> error_logs_;
    fs::path attachment_dir_;
};

// ---- one module instance driven through the lifecycle ------------------------------------------

struct instance {
    const wb_connector_descriptor* d = nullptr;
    checking_host host;
    wb_connector* conn = nullptr;
    bool started = false;
    bool stopped = false;

    instance(const wb_connector_descriptor* desc, int outcome_delay)
        : d(desc), host(outcome_delay) {}

    wb_status create(const std::string& config, std::string& error) {
        std::array<char, 512> buf{};
        const wb_status st = d->create(host.api(), host.handle(), str(config), &conn, buf.data(),
                                       buf.size());
        error = buf_text(buf);
        if (st == WB_OK && conn == nullptr) {
            error = "create returned WB_OK without an instance";
            return WB_ERR_INTERNAL;
        }
        return st;
    }

    wb_status subscribe(const std::string& id, const std::string& settings, std::string& error) {
        host.allow_subscription(id);
        const std::string url = std::string(public_base) + "/v1/ingest/" + id;
        wb_subscription sub{};
        sub.struct_size = sizeof(wb_subscription);
        sub.id = str(id);
        sub.source = str(d->source);
        sub.workflow_id = str("wf-kit");
        sub.settings_json = str(settings);
        sub.ingest_url = str(url);
        std::array<char, 512> buf{};
        const wb_status st = d->subscribe(conn, &sub, buf.data(), buf.size());
        error = buf_text(buf);
        return st;
    }

    // stop -> queued tasks and outcomes -> destroy. Returns the stop status.
    wb_status shut_down(std::int64_t deadline_ms, std::chrono::milliseconds drain_timeout) {
        wb_status st = WB_OK;
        if (conn != nullptr && !stopped) {
            st = d->stop(conn, deadline_ms);
            stopped = true;
        }
        host.drain(drain_timeout);
        if (conn != nullptr) {
            d->destroy(conn);
            conn = nullptr;
            host.mark_destroyed();
        }
        return st;
    }

    ~instance() {
        if (conn != nullptr) {
            shut_down(wall_ms() + 2000, std::chrono::seconds(5));
        }
    }
};

std::string describe_reply(const http_reply& r) {
    if (!r.responded) {
        return "no response";
    }
    return "answered " + std::to_string(r.status);
}

// ---- phases (each runs in its own child process) ------------------------------------------------

struct phase_context {
    const connector_check_options& opt;
    reporter& out;
};

// Which gate a module_loader refusal belongs to.
std::string gate_of(const std::string& message) {
    if (message.find("missing entry symbol") != std::string::npos) {
        return "abi.entry-symbol";
    }
    if (message.find("ABI major") != std::string::npos ||
        message.find("ABI minor") != std::string::npos) {
        return "abi.version";
    }
    if (message.find("invalid descriptor") != std::string::npos) {
        return "abi.descriptor";
    }
    return "abi.load";
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

void check_exports(const std::string& path, reporter& out) {
    constexpr std::string_view name = "abi.exports";
    if (std::system("command -v nm >/dev/null 2>&1") != 0) {
        out.skip(name, "nm not found (install binutils to check exported symbols)");
        return;
    }
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        out.skip(name, "no module file to inspect");
        return;
    }
    const std::string cmd = "nm -D --defined-only " + shell_quote(path) + " 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
        out.skip(name, "could not run nm");
        return;
    }
    std::vector<std::string> symbols;
    std::array<char, 1024> line{};
    while (std::fgets(line.data(), static_cast<int>(line.size()), p) != nullptr) {
        std::string l = line.data();
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) {
            l.pop_back();
        }
        // "<address> <type> <name>"; version nodes (type A) are not symbols.
        const auto last = l.rfind(' ');
        if (last == std::string::npos || last < 2) {
            continue;
        }
        const char type = l[last - 1];
        if (type == 'A') {
            continue;
        }
        std::string sym = l.substr(last + 1);
        if (auto at = sym.find('@'); at != std::string::npos) {
            sym.resize(at);
        }
        symbols.push_back(sym);
    }
    const int rc = ::pclose(p);
    if (rc != 0 && symbols.empty()) {
        out.skip(name, "nm could not read the module");
        return;
    }
    std::vector<std::string> extra;
    bool entry = false;
    for (const auto& s : symbols) {
        if (s == WOPBRIDGE_ENTRY_SYMBOL) {
            entry = true;
        } else {
            extra.push_back(s);
        }
    }
    if (!extra.empty()) {
        std::string list;
        for (std::size_t i = 0; i < extra.size() && i < 5; ++i) {
            list += (i == 0 ? "" : ", ") + extra[i];
        }
        if (extra.size() > 5) {
            list += ", ...";
        }
        out.fail(name, std::to_string(extra.size()) + " symbol(s) exported besides " +
                           WOPBRIDGE_ENTRY_SYMBOL + ": " + list +
                           " (link wopbridge::sdk for the version script)");
        return;
    }
    if (!entry) {
        out.fail(name, std::string("the dynamic symbol table has no ") + WOPBRIDGE_ENTRY_SYMBOL);
        return;
    }
    out.pass(name, std::string("only ") + WOPBRIDGE_ENTRY_SYMBOL + " is exported");
}

// `given`: false when the operator passed no settings (the empty default): an instance the schema
// refuses then means the module needs settings, a SKIP.
void check_schema(const char* what, const std::string& schema_text, const std::string& instance,
                  const char* instance_name, std::string_view schema_check,
                  std::string_view instance_check, reporter& out, bool& schema_ok, bool given,
                  const char* flag) {
    boost::system::error_code ec;
    auto doc = boost::json::parse(schema_text, ec);
    if (ec || !doc.is_object()) {
        schema_ok = false;
        out.fail(schema_check, std::string(what) + " is not a JSON object");
        out.skip(instance_check, std::string("no usable ") + what);
        return;
    }
    schema_registry reg;
    const std::string ref = std::string(what) + ".json";
    if (auto r = reg.add(std::move(doc), ref); !r) {
        schema_ok = false;
        out.fail(schema_check, std::string(what) + " is not a usable JSON Schema: " +
                                   r.error().message());
        out.skip(instance_check, std::string("no usable ") + what);
        return;
    }
    auto value = boost::json::parse(instance, ec);
    if (ec) {
        out.fail(instance_check, std::string("the ") + instance_name + " is not JSON");
        return;
    }
    const auto errors = reg.validate(value, ref);
    std::vector<validation_error> schema_errors;
    std::vector<validation_error> instance_errors;
    for (const auto& e : errors) {
        if (e.kind == schema_error_kind::bad_schema) {
            schema_errors.push_back(e);
        } else if (e.kind == schema_error_kind::invalid || e.kind == schema_error_kind::limit) {
            instance_errors.push_back(e);
        }
    }
    if (!schema_errors.empty()) {
        schema_ok = false;
        out.fail(schema_check, std::string(what) + " is not a valid JSON Schema: " +
                                   format_errors(schema_errors));
    }
    if (!instance_errors.empty() && !given) {
        out.skip(instance_check, std::string("the module needs ") + instance_name + " (" +
                                     format_errors(instance_errors) + "); pass " + flag);
    } else if (!instance_errors.empty()) {
        out.fail(instance_check, std::string("the ") + instance_name +
                                     " does not validate against " +
                                     what + ": " + format_errors(instance_errors));
    } else {
        out.pass(instance_check,
                 std::string("the ") + instance_name + " validates against " + what);
    }
}

void phase_describe(phase_context& c) {
    reporter& out = c.out;
    out.begin("abi.load");
    auto m = load_module(c.opt.module);
    if (!m) {
        const std::string gate = gate_of(m.error().message);
        const std::array<std::string_view, 4> gates = {"abi.load", "abi.entry-symbol",
                                                       "abi.version", "abi.descriptor"};
        bool after = false;
        for (auto g : gates) {
            if (g == gate) {
                out.fail(g, m.error().message);
                after = true;
            } else if (after) {
                out.skip(g, "an earlier gate failed");
            } else {
                out.pass(g, g == "abi.load" ? "the file loads" : "ok");
            }
        }
        check_exports(c.opt.module.find('/') != std::string::npos ? c.opt.module : "", out);
        return;
    }
    out.pass("abi.load", "loaded " + m->path);
    out.pass("abi.entry-symbol", std::string(WOPBRIDGE_ENTRY_SYMBOL) + " found");
    out.pass("abi.version", "module ABI " + std::to_string(m->abi_major) + "." +
                                std::to_string(m->abi_minor) + ", host " +
                                std::to_string(WOPBRIDGE_ABI_MAJOR) + "." +
                                std::to_string(WOPBRIDGE_ABI_MINOR));
    out.pass("abi.descriptor", m->name + " " + m->version + " (" + m->status + "), source " +
                                   m->source);
    check_exports(m->path, out);

    bool schemas_ok = true;
    out.begin("describe.config-schema");
    check_schema("config_schema_json", m->config_schema_json, c.opt.config_json, "config",
                 "describe.schemas", "describe.config-schema", out, schemas_ok,
                 c.opt.config_given, "--config");
    check_schema("subscription_schema_json", m->subscription_schema_json,
                 c.opt.subscription_settings_json, "subscription settings", "describe.schemas",
                 "describe.subscription-schema", out, schemas_ok, c.opt.subscription_settings_given,
                 "--subscription-settings");
    if (schemas_ok) {
        out.pass("describe.schemas", "config and subscription schemas load as JSON Schemas");
    }

    out.begin("describe.idempotent");
    auto entry = reinterpret_cast<wb_entry_fn>(::dlsym(m->handle.get(), WOPBRIDGE_ENTRY_SYMBOL));
    const wb_connector_descriptor* again = entry != nullptr ? entry() : nullptr;
    const wb_connector_descriptor* first = m->descriptor;
    auto same_text = [](const char* a, const char* b) {
        return a == b || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
    };
    if (again == first) {
        out.pass("describe.idempotent", "calling the entry twice returns the same descriptor");
    } else if (again != nullptr && again->struct_size == first->struct_size &&
               same_text(again->name, first->name) &&
               same_text(again->version, first->version) &&
               same_text(again->config_schema_json, first->config_schema_json) &&
               same_text(again->subscription_schema_json, first->subscription_schema_json) &&
               again->capabilities == first->capabilities && again->create == first->create) {
        out.pass("describe.idempotent",
                 "the entry returns an equal descriptor (at another address; keep it static)");
    } else {
        out.fail("describe.idempotent",
                 "a second call to the entry returned a different descriptor");
    }
}

void phase_validate(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    out.begin("validate.accepts-config");
    if (auto r = m->validate(c.opt.config_json); r) {
        out.pass("validate.accepts-config", "validate() accepts the given config");
    } else if (!c.opt.config_given) {
        // A correct module may need settings (a signing secret): not its fault, say what to do.
        out.skip("validate.accepts-config",
                 "the module needs settings (" + r.error().message +
                     "); pass --config with a working configuration to run the lifecycle, "
                     "http and submit checks");
    } else {
        out.fail("validate.accepts-config", r.error().message);
    }
    out.begin("validate.refuses-invalid");
    std::string problems;
    std::string reasons;
    for (std::string_view bad : {std::string_view("\"not an object\""), std::string_view("[]")}) {
        std::array<char, 512> buf{};
        const wb_status st = m->descriptor->validate(str(bad), buf.data(), buf.size());
        const std::string why = buf_text(buf);
        if (st == WB_OK) {
            problems += std::string(problems.empty() ? "" : "; ") + "accepted " + std::string(bad);
        } else if (why.empty()) {
            problems += std::string(problems.empty() ? "" : "; ") + "refused " + std::string(bad) +
                        " (" + status_name(st) + ") without a reason";
        } else if (reasons.empty()) {
            reasons = why;
        }
    }
    if (problems.empty()) {
        out.pass("validate.refuses-invalid", "refuses \"not an object\" and [] (" + reasons + ")");
    } else {
        out.fail("validate.refuses-invalid", problems);
    }
}

std::chrono::milliseconds ms(int v) {
    return std::chrono::milliseconds(v);
}

// Repeats collapse into "<what> (xN)".
std::string violations_text(const std::vector<std::string>& v) {
    std::vector<std::pair<std::string, int>> seen;
    for (const auto& x : v) {
        auto it =
            std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == x; });
        if (it == seen.end()) {
            seen.emplace_back(x, 1);
        } else {
            ++it->second;
        }
    }
    std::string s;
    for (const auto& [what, n] : seen) {
        s += (s.empty() ? "" : "; ") + what + (n > 1 ? " (x" + std::to_string(n) + ")" : "");
    }
    return s;
}

void report_protocol(std::string_view name, const checking_host& host, reporter& out) {
    const auto v = host.violations();
    if (v.empty()) {
        out.pass(name, "no host protocol violations");
    } else {
        out.fail(name, violations_text(v));
    }
}

void phase_lifecycle(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    const auto& o = c.opt;
    instance inst(m->descriptor, o.outcome_delay_ms);
    std::string error;
    const std::array<std::string_view, 7> rest = {
        "lifecycle.start",  "lifecycle.subscribe",  "lifecycle.subscribe-idempotent",
        "lifecycle.unsubscribe-unknown", "lifecycle.stop", "lifecycle.destroy",
        "lifecycle.host-protocol"};
    auto skip_from = [&](std::size_t i, const std::string& why) {
        for (; i < rest.size(); ++i) {
            out.skip(rest[i], why);
        }
    };
    out.begin("lifecycle.create");
    if (wb_status st = inst.create(o.config_json, error); st != WB_OK) {
        out.fail("lifecycle.create", status_name(st) + (error.empty() ? "" : ": " + error));
        skip_from(0, "create failed");
        return;
    }
    out.pass("lifecycle.create", "create() returned an instance");
    out.begin("lifecycle.start");
    if (wb_status st = m->descriptor->start(inst.conn); st != WB_OK) {
        out.fail("lifecycle.start", "start() returned " + status_name(st));
    } else {
        out.pass("lifecycle.start", "start() returned WB_OK");
    }
    const std::string sub(kit_subscription);
    out.begin("lifecycle.subscribe");
    wb_status st = inst.subscribe(sub, o.subscription_settings_json, error);
    if (st != WB_OK && !o.subscription_settings_given && st == WB_ERR_INVALID) {
        out.skip("lifecycle.subscribe",
                 "the module needs subscription settings (" + error +
                     "); pass --subscription-settings to run the subscribe, http and submit checks");
    } else if (st != WB_OK) {
        out.fail("lifecycle.subscribe", "subscribe() returned " + status_name(st) +
                                            (error.empty() ? "" : ": " + error));
    } else {
        out.pass("lifecycle.subscribe", "subscribe() returned WB_OK");
    }
    out.begin("lifecycle.subscribe-idempotent");
    if (st == WB_OK) {
        st = inst.subscribe(sub, o.subscription_settings_json, error);
        if (st != WB_OK) {
            out.fail("lifecycle.subscribe-idempotent",
                     "subscribing the same id twice returned " + status_name(st) +
                         (error.empty() ? "" : ": " + error));
        } else {
            out.pass("lifecycle.subscribe-idempotent", "subscribing the same id twice is WB_OK");
        }
    } else {
        out.skip("lifecycle.subscribe-idempotent", "the first subscribe failed");
    }
    out.begin("lifecycle.unsubscribe-unknown");
    st = m->descriptor->unsubscribe(inst.conn, str("kit-never-subscribed"));
    if (st != WB_OK) {
        out.fail("lifecycle.unsubscribe-unknown",
                 "unsubscribing an unknown id returned " + status_name(st));
    } else {
        out.pass("lifecycle.unsubscribe-unknown", "unsubscribing an unknown id is WB_OK");
    }
    out.begin("lifecycle.stop");
    const std::int64_t deadline = wall_ms() + o.stop_grace_ms;
    st = m->descriptor->stop(inst.conn, deadline);
    const std::int64_t returned = wall_ms();
    inst.stopped = true;
    if (st != WB_OK) {
        out.fail("lifecycle.stop", "stop() returned " + status_name(st));
    } else if (returned > deadline) {
        out.fail("lifecycle.stop", "stop() returned " + std::to_string(returned - deadline) +
                                       " ms after its deadline");
    } else {
        out.pass("lifecycle.stop", "stop() returned WB_OK " + std::to_string(deadline - returned) +
                                       " ms before its deadline");
    }
    out.begin("lifecycle.destroy");
    const bool drained = inst.host.drain(ms(o.stop_grace_ms));
    inst.shut_down(deadline, ms(o.stop_grace_ms));
    if (!drained) {
        out.fail("lifecycle.destroy", "queued tasks or submit outcomes did not finish after stop");
    } else {
        out.pass("lifecycle.destroy", "queued tasks ran after stop; destroy() returned");
    }
    report_protocol("lifecycle.host-protocol", inst.host, out);
}

// The probe request with its credentials taken away (every header but content-type dropped; only
// `verified` is judged). A module that submits that as verified would vouch for anyone's request.
void check_unsigned_copy(phase_context& c, instance& inst, const std::string& sub,
                         std::chrono::milliseconds timeout) {
    reporter& out = c.out;
    constexpr std::string_view name = "http.unsigned-copy-not-verified";
    if (!c.opt.has_probe_request) {
        out.skip(name, "pass --probe-request FILE (a signed request) to check that its unsigned "
                       "copy is not submitted as verified");
        return;
    }
    out.begin(name);
    probe_request copy;
    copy.target = c.opt.probe.target;
    copy.body = c.opt.probe.body;
    for (const auto& [k, v] : c.opt.probe.headers) {
        if (k == "content-type") {
            copy.headers.emplace_back(k, v);
        }
    }
    const auto before = inst.host.submits().size();
    const http_reply r = inst.host.send(inst.d, inst.conn, copy, sub, wall_ms(), timeout);
    const auto made = inst.host.submits();
    if (made.size() > before && made.back().verified) {
        out.fail(name, "the probe request without its signature headers was submitted as "
                       "verified (" + describe_reply(r) + ")");
    } else if (made.size() > before) {
        out.pass(name, "its unsigned copy was submitted with verified=false");
    } else {
        out.pass(name, "its unsigned copy was refused (" + describe_reply(r) + ")");
    }
}

void phase_http(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    const auto& o = c.opt;
    const std::array<std::string_view, 5> http_checks = {
        "http.respond-deadline", "http.refuses-unsigned", "http.respond-after-outcome",
        "http.unsigned-copy-not-verified", "http.host-protocol"};
    const std::array<std::string_view, 4> submit_checks = {
        "submit.after-commit", "submit.duplicate", "submit.refused-not-active",
        "submit.refused-overloaded"};
    auto skip_all = [&](const std::string& why) {
        for (auto n : http_checks) {
            out.skip(n, why);
        }
        for (auto n : submit_checks) {
            out.skip(n, why);
        }
    };
    if ((m->capabilities & WB_CAP_HTTP_INGEST) == 0) {
        skip_all("no WB_CAP_HTTP_INGEST capability");
        return;
    }
    instance inst(m->descriptor, o.outcome_delay_ms);
    std::string error;
    out.begin("http.respond-deadline");
    if (inst.create(o.config_json, error) != WB_OK ||
        m->descriptor->start(inst.conn) != WB_OK) {
        skip_all("the instance did not start (see lifecycle.*)");
        return;
    }
    std::string sub(kit_subscription);
    if (o.has_probe_request) {
        // The probe names the subscription it was signed for.
        constexpr std::string_view prefix = "/v1/ingest/";
        if (o.probe.target.rfind(prefix, 0) == 0) {
            std::string rest = o.probe.target.substr(prefix.size());
            rest = rest.substr(0, rest.find_first_of("/?"));
            if (!rest.empty()) {
                sub = rest;
            }
        }
    }
    if (inst.subscribe(sub, o.subscription_settings_json, error) != WB_OK) {
        skip_all("subscribe failed (see lifecycle.subscribe)");
        return;
    }
    const auto timeout = ms(o.respond_timeout_ms + o.outcome_delay_ms);

    probe_request unsigned_probe;
    unsigned_probe.target = "/v1/ingest/" + sub;
    unsigned_probe.headers = {{"user-agent", "wopbridge-connector-check"},
                              {"content-length", "0"}};
    const std::int64_t t0 = wall_ms();
    const auto before = inst.host.submits().size();
    const http_reply r1 =
        inst.host.send(m->descriptor, inst.conn, unsigned_probe, sub, t0, timeout);
    const auto made = inst.host.submits();
    const std::size_t submitted = made.size() - before;
    if (!r1.responded) {
        out.fail("http.respond-deadline",
                 "no respond() within " + std::to_string(timeout.count()) + " ms");
    } else {
        out.pass("http.respond-deadline",
                 "answered " + std::to_string(r1.status) + " after " +
                     std::to_string(r1.elapsed_ms) + " ms");
    }
    bool probe_submitted = false;
    if (submitted == 0) {
        if (r1.responded && r1.status >= 400 && r1.status < 500) {
            out.pass("http.refuses-unsigned",
                     "an unsigned empty request is refused with " + std::to_string(r1.status) +
                         " and nothing submitted");
        } else {
            const auto logged = inst.host.error_logs();
            out.fail("http.refuses-unsigned",
                     "an unsigned empty request was " + describe_reply(r1) +
                         " (want a 4xx refusal)" +
                         (logged.empty() ? "" : "; module logged: " + violations_text(logged)));
        }
    } else if (made.back().verified) {
        out.fail("http.refuses-unsigned",
                 "an unsigned empty request was submitted as verified (" + describe_reply(r1) +
                     ")");
        probe_submitted = true;
    } else {
        out.skip("http.refuses-unsigned",
                 "the module accepts unsigned requests under this configuration (submitted "
                 "verified=false, " + describe_reply(r1) + ")");
        probe_submitted = true;
    }
    if (submitted == 0) {
        out.skip("http.respond-after-outcome", "nothing was submitted");
    } else if (r1.answered_before_outcome) {
        out.fail("http.respond-after-outcome",
                 "the module responded before the submit outcome arrived");
    } else {
        out.pass("http.respond-after-outcome", "responded only after the delayed submit outcome");
    }

    // The submit checks replay a request that submits: --probe-request, else the unsigned probe.
    const probe_request* probe = nullptr;
    http_reply first;
    std::int64_t received_at = t0;
    if (o.has_probe_request) {
        probe = &o.probe;
        received_at = wall_ms();
        out.begin("submit.after-commit");
        first = inst.host.send(m->descriptor, inst.conn, *probe, sub, received_at, timeout);
    } else if (probe_submitted) {
        probe = &unsigned_probe;
        first = r1;
    }
    if (probe == nullptr) {
        for (auto n : submit_checks) {
            out.skip(n, "the module submitted nothing for the unsigned probe (it needs a signed "
                        "request); pass --probe-request FILE to exercise the submit path");
        }
    } else if (first.submits == 0) {
        out.fail("submit.after-commit",
                 "the probe request submitted nothing (" + describe_reply(first) + ")");
        for (std::size_t i = 1; i < submit_checks.size(); ++i) {
            out.skip(submit_checks[i], "the probe request did not submit");
        }
    } else {
        if (!first.responded) {
            out.fail("submit.after-commit", "no response to the submitted request");
        } else if (first.answered_before_outcome) {
            out.fail("submit.after-commit", "answered " + std::to_string(first.status) +
                                                " before the submit outcome arrived");
        } else if (first.status < 200 || first.status > 299) {
            out.fail("submit.after-commit", "an accepted submit was answered " +
                                                std::to_string(first.status) + " (want 2xx)");
        } else {
            out.pass("submit.after-commit", "answered " + std::to_string(first.status) +
                                                " only after the accepted outcome");
        }
        const auto first_id = inst.host.submits().back().provider_event_id;

        out.begin("submit.duplicate");
        const http_reply dup =
            inst.host.send(m->descriptor, inst.conn, *probe, sub, received_at, timeout);
        const auto after_dup = inst.host.submits();
        if (dup.submits == 0) {
            out.skip("submit.duplicate", "the replayed request was not submitted (" +
                                             describe_reply(dup) + "; replay protection?)");
        } else if (after_dup.back().provider_event_id != first_id) {
            out.fail("submit.duplicate",
                     "an identical request got a different provider_event_id, so retries of it "
                     "would start a second run");
        } else if (!dup.responded || dup.status < 200 || dup.status > 299 ||
                   dup.answered_before_outcome) {
            out.fail("submit.duplicate", "a duplicate outcome was " + describe_reply(dup) +
                                             (dup.answered_before_outcome ? " early" : "") +
                                             " (want 2xx after the outcome)");
        } else {
            out.pass("submit.duplicate",
                     "same provider_event_id, duplicate answered " + std::to_string(dup.status));
        }

        struct refusal {
            std::string_view check;
            std::string reason;
            int retry_after;
        };
        const std::array<refusal, 2> refusals = {
            refusal{"submit.refused-not-active", "subscription_not_active", 0},
            refusal{"submit.refused-overloaded", "overloaded", 7}};
        for (const refusal& rf : refusals) {
            out.begin(rf.check);
            inst.host.script_refusal(rf.reason, rf.retry_after);
            const http_reply r =
                inst.host.send(m->descriptor, inst.conn, *probe, sub, received_at, timeout);
            inst.host.script_refusal({}, 0);
            if (r.submits == 0) {
                out.skip(rf.check, "the replayed request was not submitted (" + describe_reply(r) +
                                       ")");
                continue;
            }
            if (!r.responded || r.answered_before_outcome) {
                out.fail(rf.check, "refused outcome " + rf.reason + ": " + describe_reply(r) +
                                       (r.answered_before_outcome ? " before the outcome" : ""));
            } else if (r.status >= 200 && r.status < 300) {
                out.fail(rf.check, "refused outcome " + rf.reason + " was answered " +
                                       std::to_string(r.status) +
                                       ": the provider will not retry an event nothing committed");
            } else if (rf.retry_after > 0 && r.status != 429 && r.status < 500) {
                out.fail(rf.check, "overloaded was answered " + std::to_string(r.status) +
                                       " (want 503 or 429 so the provider retries)");
            } else {
                std::string why = "refused outcome " + rf.reason + " answered " +
                                  std::to_string(r.status);
                if (rf.retry_after > 0) {
                    why += r.has_header("retry-after") ? " with Retry-After"
                                                       : " (no Retry-After header)";
                }
                out.pass(rf.check, why);
            }
        }
    }
    check_unsigned_copy(c, inst, sub, timeout);
    inst.shut_down(wall_ms() + o.stop_grace_ms, ms(o.stop_grace_ms));
    report_protocol("http.host-protocol", inst.host, out);
}

void phase_contain(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    constexpr std::string_view name = "contain.malformed-settings";
    instance inst(m->descriptor, c.opt.outcome_delay_ms);
    std::string error;
    out.begin(name);
    if (inst.create(c.opt.config_json, error) != WB_OK ||
        m->descriptor->start(inst.conn) != WB_OK) {
        out.skip(name, "the instance did not start (see lifecycle.*)");
        return;
    }
    const wb_status st = inst.subscribe("kit-malformed", "{\"kit\":", error);
    if (st == WB_OK) {
        out.fail(name, "subscribe() accepted malformed settings JSON");
    } else if (st < WB_ERR_INVALID || st > WB_ERR_STATE) {
        out.fail(name, "subscribe() returned " + status_name(st) + ", not a WB_ERR_* value");
    } else {
        out.pass(name, "malformed settings JSON refused with " + status_name(st) +
                           (error.empty() ? "" : " (" + error + ")"));
    }
    inst.shut_down(wall_ms() + c.opt.stop_grace_ms, ms(c.opt.stop_grace_ms));
}

// ---- the fork runner ----------------------------------------------------------------------------

std::string signal_text(int sig) {
    const char* d = ::strsignal(sig);
    return "signal " + std::to_string(sig) + (d != nullptr ? std::string(" (") + d + ")" : "");
}

void run_phase(const connector_check_options& opt, void (*phase)(phase_context&),
               connector_check_report& report) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        report.checks.push_back({check_result::fail, "kit", "pipe() failed"});
        return;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        report.checks.push_back({check_result::fail, "kit", "fork() failed"});
        return;
    }
    if (pid == 0) {
        ::close(fds[0]);
        reporter out(fds[1]);
        phase_context ctx{opt, out};
        try {
            phase(ctx);
        } catch (const std::exception& e) {
            out.report(check_result::fail, "kit", std::string("exception escaped: ") + e.what());
        } catch (...) {
            out.report(check_result::fail, "kit", "an unknown exception escaped into the kit");
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string buffer;
    std::string current = "kit";
    bool timed_out = false;
    const auto deadline = steady::now() + std::chrono::milliseconds(opt.phase_timeout_ms);
    auto take_lines = [&] {
        std::size_t nl;
        while ((nl = buffer.find('\n')) != std::string::npos) {
            const std::string line = buffer.substr(0, nl);
            buffer.erase(0, nl + 1);
            std::vector<std::string> parts;
            std::size_t start = 0;
            for (;;) {
                const auto tab = line.find('\t', start);
                if (tab == std::string::npos || parts.size() == 3) {
                    parts.push_back(line.substr(start));
                    break;
                }
                parts.push_back(line.substr(start, tab - start));
                start = tab + 1;
            }
            if (parts.size() == 2 && parts[0] == "B") {
                current = parts[1];
            } else if (parts.size() == 4 && parts[0] == "R") {
                check_line l;
                l.result = parts[1] == "PASS"   ? check_result::pass
                           : parts[1] == "FAIL" ? check_result::fail
                                                : check_result::skip;
                l.name = parts[2];
                l.reason = parts[3];
                report.checks.push_back(std::move(l));
            }
        }
    };
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - steady::now())
                              .count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            continue;
        }
        std::array<char, 4096> chunk{};
        const ssize_t got = ::read(fds[0], chunk.data(), chunk.size());
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break;
        }
        buffer.append(chunk.data(), static_cast<std::size_t>(got));
        take_lines();
    }
    ::close(fds[0]);
    if (timed_out) {
        ::kill(pid, SIGKILL);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    take_lines();
    if (timed_out) {
        report.checks.push_back({check_result::fail, current,
                                 "the module did not return within " +
                                     std::to_string(opt.phase_timeout_ms) + " ms (hang); killed"});
    } else if (WIFSIGNALED(status)) {
        report.checks.push_back({check_result::fail, current,
                                 "the module crashed the process with " +
                                     signal_text(WTERMSIG(status))});
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        report.checks.push_back({check_result::fail, current,
                                 "the module exited the process with status " +
                                     std::to_string(WEXITSTATUS(status))});
    }
}

bool failed(const connector_check_report& r, std::string_view prefix) {
    return std::any_of(r.checks.begin(), r.checks.end(), [&](const check_line& l) {
        return l.result == check_result::fail && l.name.rfind(prefix, 0) == 0;
    });
}

bool has(const connector_check_report& r, std::string_view name, check_result result) {
    return std::any_of(r.checks.begin(), r.checks.end(), [&](const check_line& l) {
        return l.result == result && l.name == name;
    });
}

} // namespace

std::string_view to_string(check_result r) noexcept {
    switch (r) {
    case check_result::pass:
        return "PASS";
    case check_result::fail:
        return "FAIL";
    case check_result::skip:
        return "SKIP";
    }
    return "SKIP";
}

std::size_t connector_check_report::count(check_result r) const noexcept {
    return static_cast<std::size_t>(std::count_if(
        checks.begin(), checks.end(), [&](const check_line& l) { return l.result == r; }));
}

int connector_check_report::exit_code() const noexcept {
    return count(check_result::fail) == 0 ? 0 : 1;
}

bool parse_probe_request(std::string_view text, probe_request& out, std::string& error) {
    out = probe_request{};
    std::size_t pos = 0;
    auto next_line = [&](std::string& line) {
        if (pos >= text.size()) {
            return false;
        }
        auto nl = text.find('\n', pos);
        const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
        line.assign(text.substr(pos, end - pos));
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        return true;
    };
    std::string line;
    if (!next_line(line) || line.empty()) {
        error = "probe request: the first line must be 'METHOD TARGET'";
        return false;
    }
    const auto sp = line.find(' ');
    if (sp == std::string::npos || sp == 0) {
        error = "probe request: the first line must be 'METHOD TARGET'";
        return false;
    }
    out.method = line.substr(0, sp);
    std::string target = line.substr(sp + 1);
    if (auto sp2 = target.find(' '); sp2 != std::string::npos) {
        target.resize(sp2); // tolerate a trailing "HTTP/1.1"
    }
    if (target.empty() || target.front() != '/') {
        error = "probe request: TARGET must start with '/'";
        return false;
    }
    out.target = target;
    for (;;) {
        if (!next_line(line) || line.empty()) {
            break;
        }
        const auto colon = line.find(':');
        if (colon == std::string::npos || colon == 0) {
            error = "probe request: header line without 'name: value'";
            return false;
        }
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char ch) { return std::tolower(ch); });
        std::string value = line.substr(colon + 1);
        const auto first = value.find_first_not_of(" \t");
        value = first == std::string::npos ? "" : value.substr(first);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
            value.pop_back();
        }
        out.headers.emplace_back(std::move(name), std::move(value));
    }
    out.body.assign(text.substr(std::min(pos, text.size())));
    return true;
}

connector_check_report run_connector_check(const connector_check_options& options) {
    connector_check_report report;
    run_phase(options, &phase_describe, report);
    const bool loaded = has(report, "abi.descriptor", check_result::pass);
    const std::array<std::string_view, 5> later = {"validate.", "lifecycle.", "http.", "submit.",
                                                   "contain."};
    if (!loaded) {
        for (auto p : later) {
            report.checks.push_back({check_result::skip, std::string(p) + "*",
                                     "the module did not pass the ABI gates"});
        }
        return report;
    }
    run_phase(options, &phase_validate, report);
    if (!has(report, "validate.accepts-config", check_result::pass)) {
        const bool needs_settings = has(report, "validate.accepts-config", check_result::skip);
        for (std::size_t i = 1; i < later.size(); ++i) {
            report.checks.push_back(
                {check_result::skip, std::string(later[i]) + "*",
                 needs_settings ? "the module needs settings: pass --config"
                                : "validate() refused the config, so the host would not create "
                                  "an instance"});
        }
        return report;
    }
    run_phase(options, &phase_lifecycle, report);
    if (failed(report, "lifecycle.create")) {
        for (std::size_t i = 2; i < later.size(); ++i) {
            report.checks.push_back({check_result::skip, std::string(later[i]) + "*",
                                     "create() failed"});
        }
        return report;
    }
    run_phase(options, &phase_http, report);
    run_phase(options, &phase_contain, report);
    return report;
}

std::string format_check_text(const connector_check_report& report) {
    std::string out;
    for (const auto& l : report.checks) {
        std::string name = l.name;
        if (name.size() < 32) {
            name.resize(32, ' ');
        }
        out += std::string(to_string(l.result)) + "  " + name + " " + l.reason + "\n";
    }
    out += std::to_string(report.count(check_result::pass)) + " passed, " +
           std::to_string(report.count(check_result::fail)) + " failed, " +
           std::to_string(report.count(check_result::skip)) + " skipped\n";
    return out;
}

std::string format_check_json(const connector_check_report& report, std::string_view module) {
    boost::json::object doc;
    doc["module"] = module;
    boost::json::array checks;
    for (const auto& l : report.checks) {
        checks.push_back(boost::json::object{
            {"result", to_string(l.result)}, {"name", l.name}, {"reason", l.reason}});
    }
    doc["checks"] = std::move(checks);
    doc["passed"] = report.count(check_result::pass);
    doc["failed"] = report.count(check_result::fail);
    doc["skipped"] = report.count(check_result::skip);
    doc["ok"] = report.exit_code() == 0;
    return boost::json::serialize(doc) + "\n";
}

} // namespace wopbridge
