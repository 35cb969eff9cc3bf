// The local run ledger's starter: a workflow's command is spawned with posix_spawn after run.started
// is committed; one reaper thread polls pidfds (child exits), the non-blocking stdin pipes (the
// TriggerEvent JSON is written there, never on the caller's thread) and an eventfd (new child, stop),
// with the nearest timeout as the poll timeout: no busy-waiting, no thread per child.
// The command sees WOPBRIDGE_RUN_ID, WOPBRIDGE_WORKFLOW_ID and WOPBRIDGE_SUBSCRIPTION_ID in its
// environment besides the workflow's `env` additions. It runs in its own process group, so a timeout
// kills the whole group (SIGTERM, then SIGKILL after the grace period).

#include "runs/run_starter.hpp"
#include "core/thread_name.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

extern char** environ;

namespace wopbridge {
namespace {

using steady = std::chrono::steady_clock;

bool is_executable_file(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// argv[0] with a '/' is relative to the working directory; a bare name is looked up in PATH.
std::optional<std::string> resolve_command(const std::string& cmd, const std::string& wd) {
    if (cmd.empty()) {
        return std::nullopt;
    }
    if (cmd.find('/') != std::string::npos) {
        std::filesystem::path p(cmd);
        if (p.is_relative()) {
            p = std::filesystem::path(wd) / p;
        }
        std::string s = p.lexically_normal().string();
        return is_executable_file(s) ? std::optional<std::string>(s) : std::nullopt;
    }
    const char* path_env = std::getenv("PATH");
    std::string path = path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t colon = path.find(':', start);
        std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (dir.empty() || dir[0] != '/') {
            dir = (std::filesystem::path(wd) / dir).string(); // "" or relative PATH entries: the wd
        }
        std::string candidate = dir + "/" + cmd;
        if (is_executable_file(candidate)) {
            return candidate;
        }
        if (colon == std::string::npos) {
            break;
        }
        start = colon + 1;
    }
    return std::nullopt;
}

class local_run_starter final : public run_starter {
public:
    local_run_starter(std::vector<local_workflow> workflows, std::string wd, local_run_options opts)
        : wd_(std::move(wd)), opts_(opts) {
        for (auto& w : workflows) {
            ids_.push_back(w.id);
            workflows_.emplace(w.id, std::move(w));
        }
        wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        reaper_ = std::thread([this] {
            name_this_thread("wb-run-reaper");
            reap_loop();
        });
    }

    ~local_run_starter() override { stop(); }

    run_start_result prepare(const run_start_request& req) override {
        run_start_result r;
        auto it = workflows_.find(req.workflow_id);
        if (it == workflows_.end()) {
            r.outcome = run_start_result::kind::permanent;
            r.reason = "unknown workflow";
            return r;
        }
        {
            std::lock_guard lock(mu_);
            if (stopping_) {
                r.outcome = run_start_result::kind::retry;
                r.reason = "run starter stopping";
                return r;
            }
        }
        if (!it->second.command.empty() && !resolve_command(it->second.command[0], wd_)) {
            // Transient: a deploy may be putting the script in place; retried like any attempt.
            r.outcome = run_start_result::kind::retry;
            r.reason = "workflow command missing or not executable";
            return r;
        }
        if (it->second.command.empty()) {
            // Nothing to execute: run.completed is committed with run.started in the attempt's
            // one transaction, so a crash after that commit cannot leave the run `running` (and
            // the restart would fail it as interrupted although nothing was).
            r.follow_up_events.emplace_back("run.completed", "{}");
            r.status_after = run_status::completed;
        }
        return r;
    }

    void start(const run_start_request& req, run_start_callback done) override {
        run_start_result r = prepare(req);
        if (r.outcome != run_start_result::kind::started) {
            done(std::move(r));
            return;
        }
        const local_workflow& wf = workflows_.at(req.workflow_id);
        if (wf.command.empty()) {
            done(std::move(r)); // prepare() reported run.completed
            return;
        }
        std::string err;
        if (!spawn(req, wf, err)) {
            r.outcome = run_start_result::kind::retry;
            r.reason = err;
        }
        done(std::move(r));
    }

    bool starts_before_commit() const noexcept override { return false; }

    void set_lifecycle_sink(run_lifecycle_sink* sink) override {
        std::lock_guard lock(mu_);
        sink_ = sink;
    }

    void stop() override {
        std::unique_lock lock(mu_);
        if (stopped_) {
            return;
        }
        stopping_ = true;
        auto all_reaped = [this] { return children_.empty(); };
        if (!cv_.wait_for(lock, std::chrono::milliseconds(opts_.stop_wait_ms), all_reaped)) {
            auto now = steady::now();
            for (auto& [pid, c] : children_) {
                signal_child(c, SIGTERM);
                c.term_sent = true;
                c.kill_at = now + std::chrono::milliseconds(opts_.kill_grace_ms);
            }
            wake();
            // The reaper escalates to SIGKILL at kill_at; a SIGKILLed child is reaped promptly.
            cv_.wait_for(lock, std::chrono::milliseconds(opts_.kill_grace_ms + 5000), all_reaped);
        }
        quit_ = true;
        stopped_ = true;
        wake();
        lock.unlock();
        if (reaper_.joinable()) {
            reaper_.join();
        }
        if (wake_fd_ >= 0) {
            ::close(wake_fd_);
            wake_fd_ = -1;
        }
    }

    std::vector<std::string> workflow_ids() const override { return ids_; }

private:
    struct child {
        pid_t pid = -1;
        int pidfd = -1;
        int stdin_fd = -1;
        int out_fd = -1;  // the read end of the command's stdout/stderr, when captured
        int log_fd = -1;  // the run's output log
        std::size_t logged = 0;
        bool truncated = false;
        std::string input;
        std::size_t written = 0;
        std::string run_id;
        steady::time_point deadline;
        steady::time_point kill_at;
        bool term_sent = false;
        bool timed_out = false;
    };

    struct finished {
        std::string run_id;
        bool ok;
        int code;
    };

    std::map<std::string, local_workflow> workflows_;
    std::vector<std::string> ids_;
    std::string wd_;
    local_run_options opts_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<pid_t, child> children_;
    run_lifecycle_sink* sink_ = nullptr;
    bool stopping_ = false;
    bool stopped_ = false;
    bool quit_ = false;
    int wake_fd_ = -1;
    std::thread reaper_;

    void wake() {
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
    }

    static void signal_child(const child& c, int sig) {
        // Its own process group (pgid = pid): the whole tree gets the signal. The pid cannot be
        // reused before we reap it.
        if (::kill(-c.pid, sig) != 0) {
            ::kill(c.pid, sig);
        }
    }

    bool spawn(const run_start_request& req, const local_workflow& wf, std::string& err) {
        auto exe = resolve_command(wf.command[0], wd_);
        if (!exe) {
            err = "workflow command missing or not executable";
            return false;
        }
        std::vector<std::string> args = wf.command;
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);

        std::map<std::string, std::string> env_map;
        for (char** e = environ; e && *e; ++e) {
            std::string kv(*e);
            auto eq = kv.find('=');
            if (eq != std::string::npos) {
                env_map[kv.substr(0, eq)] = kv.substr(eq + 1);
            }
        }
        for (const auto& [k, v] : wf.env) {
            env_map[k] = v;
        }
        env_map["WOPBRIDGE_RUN_ID"] = req.run_id;
        env_map["WOPBRIDGE_WORKFLOW_ID"] = req.workflow_id;
        env_map["WOPBRIDGE_SUBSCRIPTION_ID"] = req.subscription_id;
        std::vector<std::string> env_strings;
        for (const auto& [k, v] : env_map) {
            env_strings.push_back(k + "=" + v);
        }
        std::vector<char*> envp;
        for (auto& s : env_strings) {
            envp.push_back(s.data());
        }
        envp.push_back(nullptr);

        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            err = "cannot create the stdin pipe";
            return false;
        }
        ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);

        // The command's output: a pipe the reaper drains into the run's log file.
        int out[2] = {-1, -1};
        int log_fd = -1;
        if (!opts_.output_dir.empty()) {
            const std::string log_path = opts_.output_dir + "/" + req.run_id + ".log";
            log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (log_fd < 0 || ::pipe2(out, O_CLOEXEC) != 0) {
                if (log_fd >= 0) {
                    ::close(log_fd);
                }
                ::close(fds[0]);
                ::close(fds[1]);
                err = "cannot create the run's output log in " + opts_.output_dir;
                return false;
            }
            ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
        }

        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
        if (out[1] >= 0) {
            posix_spawn_file_actions_adddup2(&fa, out[1], 1);
            posix_spawn_file_actions_adddup2(&fa, out[1], 2);
        } else if (!opts_.inherit_output) {
            posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
            posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        }
        posix_spawn_file_actions_addchdir_np(&fa, wd_.c_str());
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t empty, defaults;
        sigemptyset(&empty);
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGPIPE);
        posix_spawnattr_setsigmask(&attr, &empty);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                            POSIX_SPAWN_SETPGROUP);
        pid_t pid = -1;
        int rc = ::posix_spawn(&pid, exe->c_str(), &fa, &attr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        ::close(fds[0]);
        if (out[1] >= 0) {
            ::close(out[1]); // the child holds the write end now
        }
        if (rc != 0) {
            if (out[0] >= 0) {
                ::close(out[0]);
                ::close(log_fd);
            }
            ::close(fds[1]);
            err = std::string("cannot start the workflow command: ") + std::strerror(rc);
            return false;
        }
        // The raw syscall: glibc 2.36's <sys/pidfd.h> lacks extern "C" guards.
        int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (pidfd < 0) {
            // Without a pidfd we could not reap it without blocking: do not leave it running.
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            ::close(fds[1]);
            if (out[0] >= 0) {
                ::close(out[0]);
                ::close(log_fd);
            }
            err = "cannot watch the workflow command (pidfd_open failed)";
            return false;
        }
        ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
        child c;
        c.pid = pid;
        c.pidfd = pidfd;
        c.stdin_fd = fds[1];
        c.out_fd = out[0];
        c.log_fd = log_fd;
        c.input = req.trigger_event_json;
        c.run_id = req.run_id;
        c.deadline = steady::now() + std::chrono::milliseconds(wf.timeout_ms);
        {
            std::lock_guard lock(mu_);
            children_.emplace(pid, std::move(c));
        }
        wake();
        return true;
    }

    void reap_loop() {
        // Writes to a pipe whose reader has gone raise SIGPIPE on this thread: block it here (a
        // blocked, thread-directed SIGPIPE stays pending and harmless) and rely on EPIPE.
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

        std::unique_lock lock(mu_);
        while (!quit_) {
            std::vector<pollfd> pfds;
            enum class fd_role { exit, input, output };
            std::vector<std::pair<pid_t, fd_role>> owners;
            pfds.push_back({wake_fd_, POLLIN, 0});
            owners.emplace_back(-1, fd_role::exit);
            auto now = steady::now();
            std::optional<steady::time_point> next;
            for (auto& [pid, c] : children_) {
                pfds.push_back({c.pidfd, POLLIN, 0});
                owners.emplace_back(pid, fd_role::exit);
                if (c.stdin_fd >= 0) {
                    pfds.push_back({c.stdin_fd, POLLOUT, 0});
                    owners.emplace_back(pid, fd_role::input);
                }
                if (c.out_fd >= 0) {
                    pfds.push_back({c.out_fd, POLLIN, 0});
                    owners.emplace_back(pid, fd_role::output);
                }
                auto t = c.term_sent ? c.kill_at : c.deadline;
                if (!next || t < *next) {
                    next = t;
                }
            }
            int timeout = -1;
            if (next) {
                auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
                timeout = static_cast<int>(std::clamp<long long>(ms, 0, 60 * 60 * 1000));
            }
            lock.unlock();
            int n = ::poll(pfds.data(), pfds.size(), timeout);
            lock.lock();
            if (n < 0 && errno != EINTR) {
                break; // cannot happen with valid fds; stop() still returns
            }
            std::uint64_t drained = 0;
            [[maybe_unused]] auto rd = ::read(wake_fd_, &drained, sizeof drained);

            std::vector<finished> done;
            for (std::size_t i = 1; i < pfds.size(); ++i) {
                auto it = children_.find(owners[i].first);
                if (it == children_.end() || pfds[i].revents == 0) {
                    continue;
                }
                child& c = it->second;
                if (owners[i].second == fd_role::input) {
                    write_input(c);
                    continue;
                }
                if (owners[i].second == fd_role::output) {
                    drain_output(c, opts_.max_output_bytes);
                    continue;
                }
                int status = 0;
                pid_t r = ::waitpid(c.pid, &status, WNOHANG);
                if (r != c.pid) {
                    continue;
                }
                int code = WIFEXITED(status) ? WEXITSTATUS(status)
                                             : (WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1);
                done.push_back({c.run_id, !c.timed_out && WIFEXITED(status) && code == 0, code});
                drain_output(c, opts_.max_output_bytes); // what it wrote last is in the pipe
                close_child(c);
                children_.erase(it);
            }
            now = steady::now();
            for (auto& [pid, c] : children_) {
                if (!c.term_sent && now >= c.deadline) {
                    c.timed_out = true;
                    c.term_sent = true;
                    c.kill_at = now + std::chrono::milliseconds(opts_.kill_grace_ms);
                    signal_child(c, SIGTERM);
                } else if (c.term_sent && now >= c.kill_at) {
                    signal_child(c, SIGKILL);
                    c.kill_at = now + std::chrono::hours(1); // reaped when the pidfd fires
                }
            }
            if (!done.empty()) {
                run_lifecycle_sink* sink = sink_;
                lock.unlock();
                for (const auto& f : done) {
                    if (sink) {
                        sink->on_run_finished(f.run_id, f.ok, f.code);
                    }
                }
                lock.lock();
                cv_.notify_all();
            }
        }
        // Quitting with children left (they outlived stop()'s deadlines): release our fds; the
        // kernel reparents them when the process exits.
        for (auto& [pid, c] : children_) {
            close_child(c);
        }
        children_.clear();
    }

    static void write_input(child& c) {
        while (c.written < c.input.size()) {
            ssize_t w = ::write(c.stdin_fd, c.input.data() + c.written, c.input.size() - c.written);
            if (w > 0) {
                c.written += static_cast<std::size_t>(w);
                continue;
            }
            if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                return; // poll again
            }
            break; // EPIPE: the command does not read its input
        }
        ::close(c.stdin_fd);
        c.stdin_fd = -1;
        c.input.clear();
    }

    // Reads what the command wrote (until the pipe is empty or closed) into its log, up to `limit`
    // bytes; past it, one truncation line, and the rest is read and dropped.
    static void drain_output(child& c, std::size_t limit) {
        char buf[65536];
        while (c.out_fd >= 0) {
            ssize_t n = ::read(c.out_fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && errno == EAGAIN) {
                return;
            }
            if (n <= 0) {
                ::close(c.out_fd); // every writer is gone (or the pipe failed)
                c.out_fd = -1;
                return;
            }
            const auto room = limit > c.logged ? limit - c.logged : 0;
            const auto keep = std::min<std::size_t>(room, static_cast<std::size_t>(n));
            if (keep > 0 && c.log_fd >= 0) {
                [[maybe_unused]] auto w = ::write(c.log_fd, buf, keep);
            }
            c.logged += keep;
            if (keep < static_cast<std::size_t>(n) && !c.truncated && c.log_fd >= 0) {
                c.truncated = true;
                const std::string note =
                    "\n[wopbridge: output truncated at " + std::to_string(limit) + " bytes]\n";
                [[maybe_unused]] auto w = ::write(c.log_fd, note.data(), note.size());
            }
        }
    }

    static void close_child(child& c) {
        if (c.out_fd >= 0) {
            ::close(c.out_fd);
            c.out_fd = -1;
        }
        if (c.log_fd >= 0) {
            ::close(c.log_fd);
            c.log_fd = -1;
        }
        if (c.stdin_fd >= 0) {
            ::close(c.stdin_fd);
            c.stdin_fd = -1;
        }
        if (c.pidfd >= 0) {
            ::close(c.pidfd);
            c.pidfd = -1;
        }
    }
};

} // namespace

std::unique_ptr<run_starter> make_local_run_starter(std::vector<local_workflow> workflows,
                                                    std::string working_directory,
                                                    local_run_options options) {
    return std::make_unique<local_run_starter>(std::move(workflows), std::move(working_directory), options);
}

std::unique_ptr<run_starter> make_local_run_starter(std::vector<local_workflow> workflows,
                                                    std::string working_directory) {
    return make_local_run_starter(std::move(workflows), std::move(working_directory), local_run_options{});
}

} // namespace wopbridge
