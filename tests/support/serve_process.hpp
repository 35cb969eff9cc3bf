#pragma once
// Runs the real `wopbridge serve --config FILE` as a child process for process-level tests: start,
// learn the bound port from the startup log line, send signals, wait for the exit status.

#include <string>
#include <vector>
#include <sys/types.h>

namespace wopbridge::testing {

class serve_process {
public:
    // Starts the program; stderr/stdout go to log_file. Returns false (with the log and every
    // thread's backtrace in `error`) when no startup line with a non-zero port appears within the
    // deadline. The deadline is generous: a loaded 2-core CI machine can stall a start for seconds.
    bool start(const std::string& config_file, const std::string& log_file, int deadline_s = 60);
    ~serve_process();

    const std::string& url() const noexcept { return url_; }
    pid_t pid() const noexcept { return pid_; }
    void signal(int sig) const;
    // Waits for the child to exit; returns its exit code, or -1 when it was killed by a signal or
    // did not exit within the deadline (it is then killed).
    int wait_exit(int deadline_s = 30);
    std::string error;
    std::vector<std::string> extra_args; // after `serve --config FILE`, e.g. {"--init"}
    std::vector<std::string> extra_env;  // NAME=value for the child
    std::string working_dir;             // the child's cwd (where a core file lands); "" = ours

private:
    pid_t pid_ = -1;
    std::string url_;
    std::string log_;
};

std::string read_text_file(const std::string& path);
// The first non-empty line of `text` ("" when none): what a CLI's error output leads with.
std::string first_line(const std::string& text);

// A /proc/PID/status figure in KiB ("VmRSS", "VmHWM" = peak resident), or -1.
long proc_status_kib(pid_t pid, const std::string& field);

// Every thread's stack of a live process (gdb -batch), for a test's failure message.
std::string thread_backtraces(pid_t pid);

// The top of a process-level test config: loopback on port 0, one API key (tenant default, scopes
// webhooks:manage and runs:read), the SQLite store and host key beside the config file.
std::string sqlite_serve_prelude(const std::string& api_key);

} // namespace wopbridge::testing
