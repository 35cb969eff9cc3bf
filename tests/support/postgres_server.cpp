#include "support/postgres_server.hpp"

#include "support/eventually.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace wopbridge::testing {
namespace {

namespace fs = std::filesystem;

// Runs a shell command; its combined output goes to `out`. Every argument we pass is a path we
// created or a fixed word, so simple quoting suffices.
int run(const std::string& command, std::string* out = nullptr) {
    std::string full = command + " 2>&1";
    FILE* pipe = ::popen(full.c_str(), "r");
    if (pipe == nullptr) {
        return -1;
    }
    std::array<char, 4096> buf{};
    std::string text;
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) {
        text.append(buf.data(), n);
    }
    int status = ::pclose(pipe);
    if (out != nullptr) {
        *out = std::move(text);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out.push_back(c);
        }
    }
    return out + "'";
}

fs::path find_bin_dir() {
    if (const char* env = std::getenv("WOPBRIDGE_PG_BINDIR"); env != nullptr && *env != '\0') {
        return fs::exists(fs::path(env) / "initdb") ? fs::path(env) : fs::path{};
    }
    for (int v = 18; v >= 12; --v) {
        fs::path dir = fs::path("/usr/lib/postgresql") / std::to_string(v) / "bin";
        if (fs::exists(dir / "initdb") && fs::exists(dir / "pg_ctl")) {
            return dir;
        }
    }
    return {};
}

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return 0;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        port = ntohs(addr.sin_port);
    }
    ::close(fd);
    return port;
}

std::mutex postgres_shared_mu;
std::unique_ptr<postgres_server> shared_server;
std::string shared_reason;
bool shared_tried = false;

} // namespace

std::unique_ptr<postgres_server> postgres_server::launch(std::string& why) {
    std::unique_ptr<postgres_server> s(new postgres_server());
    s->bin_dir_ = find_bin_dir();
    if (s->bin_dir_.empty()) {
        why = "PostgreSQL server binaries not found (/usr/lib/postgresql/<v>/bin or "
              "$WOPBRIDGE_PG_BINDIR); scripts/setup-debian.sh postgres installs them";
        return nullptr;
    }
    std::string tmpl = (fs::temp_directory_path() / "wopbridge-pg-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        why = "mkdtemp failed";
        return nullptr;
    }
    s->dir_ = tmpl;
    if (::geteuid() == 0) {
        const passwd* pw = ::getpwnam("postgres");
        if (pw == nullptr) {
            why = "running as root and there is no `postgres` user to run the server as";
            return nullptr;
        }
        if (::chown(s->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
            why = "cannot hand the temp dir to the postgres user";
            return nullptr;
        }
        s->as_postgres_user_ = true;
    }
    std::string out;
    const std::string data = (s->dir_ / "data").string();
    if (run(s->server_command("initdb") + " -D " + quoted(data) +
                " -U postgres -A trust -E UTF8 --no-sync --no-instructions",
            &out) != 0) {
        why = "initdb failed: " + out;
        return nullptr;
    }
    // A port taken between free_port() and the bind is retried with another one.
    for (int attempt = 0; attempt < 3; ++attempt) {
        s->port_ = free_port();
        if (s->port_ != 0 && s->start()) {
            return s;
        }
    }
    std::string log;
    run("tail -n 20 " + quoted((s->dir_ / "server.log").string()), &log);
    why = "PostgreSQL did not start: " + log;
    return nullptr;
}

postgres_server* postgres_server::shared() {
    std::lock_guard lock(postgres_shared_mu);
    if (!shared_tried) {
        shared_tried = true;
        shared_server = launch(shared_reason);
    }
    return shared_server.get();
}

std::string postgres_server::shared_unavailable_reason() {
    std::lock_guard lock(postgres_shared_mu);
    return shared_reason;
}

postgres_server::~postgres_server() {
    if (port_ != 0) {
        run(server_command("pg_ctl") + " -D " + quoted((dir_ / "data").string()) +
            " -m immediate -w -t 30 stop");
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

std::string postgres_server::server_command(const std::string& program) const {
    std::string cmd;
    if (as_postgres_user_) {
        cmd = "runuser -u postgres -- ";
    }
    return cmd + quoted((bin_dir_ / program).string());
}

std::string postgres_server::client_command(const std::string& program) const {
    return quoted((bin_dir_ / program).string()) + " -h 127.0.0.1 -p " + std::to_string(port_) +
           " -U postgres";
}

std::string postgres_server::url(const std::string& database) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

bool postgres_server::start() {
    const std::string options =
        "-p " + std::to_string(port_) +
        " -c listen_addresses=127.0.0.1 -c unix_socket_directories=" + dir_.string() +
        " -c max_connections=400";
    // pg_ctl -w polls until the server accepts connections, bounded by -t.
    if (run(server_command("pg_ctl") + " -D " + quoted((dir_ / "data").string()) + " -l " +
            quoted((dir_ / "server.log").string()) + " -w -t 60 -o " + quoted(options) +
            " start") != 0) {
        return false;
    }
    return wait_ready();
}

bool postgres_server::stop() {
    return run(server_command("pg_ctl") + " -D " + quoted((dir_ / "data").string()) +
               " -m fast -w -t 60 stop") == 0;
}

bool postgres_server::wait_ready() {
    // pg_ctl -w has waited already; after a restart the server may still be recovering.
    return eventually([&] { return run(client_command("pg_isready") + " -d postgres -t 2") == 0; },
                      std::chrono::seconds(30));
}

std::string postgres_server::create_database() {
    std::string name;
    {
        std::lock_guard lock(postgres_shared_mu);
        name = "wb_" + std::to_string(::getpid()) + "_" + std::to_string(next_database_++);
    }
    return sql("postgres", "CREATE DATABASE " + name) ? name : std::string{};
}

bool postgres_server::sql(const std::string& database, const std::string& statement,
                          std::string* output) {
    std::string out;
    int rc = run(client_command("psql") + " -X -q -A -t -v ON_ERROR_STOP=1 -d " + quoted(database) +
                     " -c " + quoted(statement),
                 &out);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) {
        out.pop_back();
    }
    if (output != nullptr) {
        *output = out;
    }
    return rc == 0;
}

} // namespace wopbridge::testing
