#include "support/rabbitmq_server.hpp"

#include "support/eventually.hpp"
#include "support/local_server_process.hpp"

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace wopbridge::testing {

namespace {

// The plain script: /usr/sbin/rabbitmq-server is a wrapper that switches to the rabbitmq user.
constexpr const char* server_script = "/usr/lib/rabbitmq/bin/rabbitmq-server";

pid_t spawn(std::vector<std::string> args, const std::vector<std::string>& extra_env,
            const std::string& out_file, std::string& error) {
    pid_t pid = -1;
    const int rc = spawn_server({.argv = args, .extra_env = extra_env, .output_file = out_file},
                                pid);
    if (rc != 0) {
        error = std::string("spawn ") + args[0] + ": " + std::strerror(rc);
        return -1;
    }
    return pid;
}

amqp_connection_state_t connect_guest(int port, std::string& error) {
    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t* sock = amqp_tcp_socket_new(conn);
    timeval tv{1, 0};
    int st = sock ? amqp_socket_open_noblock(sock, "127.0.0.1", port, &tv) : AMQP_STATUS_NO_MEMORY;
    if (st != AMQP_STATUS_OK) {
        error = std::string("connect: ") + amqp_error_string2(st);
        amqp_destroy_connection(conn);
        return nullptr;
    }
    timeval rpc{5, 0};
    amqp_set_handshake_timeout(conn, &rpc);
    amqp_set_rpc_timeout(conn, &rpc);
    auto r = amqp_login(conn, "/", 0, AMQP_DEFAULT_FRAME_SIZE, 0, AMQP_SASL_METHOD_PLAIN, "guest",
                        "guest");
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        amqp_channel_open(conn, 1);
        r = amqp_get_rpc_reply(conn);
    }
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        error = "login/channel failed";
        amqp_destroy_connection(conn);
        return nullptr;
    }
    return conn;
}

std::mutex rabbitmq_shared_mu;
std::unique_ptr<rabbitmq_server>& shared_node() {
    static std::unique_ptr<rabbitmq_server> node;
    return node;
}
std::string& shared_failure() {
    static std::string s;
    return s;
}

} // namespace

bool rabbitmq_server::available() {
    return ::access(server_script, X_OK) == 0 && ::access("/usr/bin/epmd", X_OK) == 0;
}

rabbitmq_server* rabbitmq_server::shared() {
    std::lock_guard lock(rabbitmq_shared_mu);
    auto& node = shared_node();
    if (!node && shared_failure().empty()) {
        auto n = std::make_unique<rabbitmq_server>();
        if (n->start()) {
            node = std::move(n);
        } else {
            shared_failure() = n->error;
        }
    }
    return node.get();
}

std::string rabbitmq_server::shared_error() {
    std::lock_guard lock(rabbitmq_shared_mu);
    return shared_failure();
}

rabbitmq_server::rabbitmq_server(rabbitmq_server_options options)
    : node_("wbtest" + std::to_string(::getpid()) + "x" + std::to_string(free_loopback_port()) +
            "@localhost"),
      port_(free_loopback_port()), dist_port_(free_loopback_port()), epmd_port_(free_loopback_port()) {
    std::ofstream conf(dir_.file("rabbitmq.conf"));
    conf << "listeners.tcp.default = 127.0.0.1:" << port_ << "\n"
         << "loopback_users.guest = true\n"
         << "log.console = false\nlog.file.level = info\n";
    if (options.tls) {
        tls_port_ = free_loopback_port();
        const std::string d = dir_.path().string();
        // A CA and a server certificate for localhost and 127.0.0.1, valid for two days.
        const std::string script =
            "set -e; cd '" + d +
            "'; openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
            "-subj /CN=wopbridge-test-ca 2>/dev/null; "
            "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
            "-subj /CN=localhost 2>/dev/null; "
            "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext; "
            "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
            "-out server.pem -days 2 -extfile san.ext 2>/dev/null";
        std::string err;
        pid_t pid = spawn({"/bin/sh", "-c", script}, {}, dir_.file("openssl.out"), err);
        int status = -1;
        while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (pid <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            error = "cannot make test certificates " + err;
        }
        conf << "listeners.ssl.default = 127.0.0.1:" << tls_port_ << "\n"
             << "ssl_options.cacertfile = " << d << "/ca.pem\n"
             << "ssl_options.certfile = " << d << "/server.pem\n"
             << "ssl_options.keyfile = " << d << "/server.key\n"
             << "ssl_options.verify = verify_none\n"
             << "ssl_options.fail_if_no_peer_cert = false\n";
    }
    conf.close();
    std::ofstream(dir_.file("enabled_plugins")) << "[].\n";
    std::ofstream(dir_.file("rabbitmq-env.conf")) << "";
}

rabbitmq_server::~rabbitmq_server() {
    kill();
    signal_and_reap(epmd_pid_, SIGKILL);
}

std::string rabbitmq_server::url() const {
    return "amqp://guest:guest@127.0.0.1:" + std::to_string(port_) + "/";
}

std::string rabbitmq_server::log_text() const {
    std::stringstream ss;
    for (const auto& f : {dir_.file("server.out"), dir_.file("log/" + node_ + ".log")}) {
        std::ifstream in(f);
        ss << in.rdbuf();
    }
    return ss.str();
}

bool rabbitmq_server::start_epmd() {
    if (epmd_pid_ > 0) {
        return true;
    }
    // Our own epmd, in the foreground: erl finds it on ERL_EPMD_PORT and starts none.
    epmd_pid_ = spawn({"/usr/bin/epmd", "-port", std::to_string(epmd_port_)}, {},
                      dir_.file("epmd.out"), error);
    if (epmd_pid_ <= 0) {
        return false;
    }
    return eventually(
        [&] {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            a.sin_port = htons(static_cast<std::uint16_t>(epmd_port_));
            const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
            ::close(fd);
            return ok;
        },
        std::chrono::seconds(10));
}

bool rabbitmq_server::start() {
    if (pid_ > 0) {
        return true;
    }
    if (!error.empty()) {
        return false; // the constructor could not prepare the node
    }
    if (!start_epmd()) {
        error = "epmd did not start: " + error;
        return false;
    }
    const std::string d = dir_.path().string();
    const std::vector<std::string> env{
        "HOME=" + d,                  // the Erlang cookie
        "RUNNING_UNDER_SYSTEMD=true", // the script execs erl: our child is the node itself
        "RABBITMQ_NODENAME=" + node_,
        "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
        "RABBITMQ_NODE_PORT=" + std::to_string(port_),
        "RABBITMQ_DIST_PORT=" + std::to_string(dist_port_),
        "ERL_EPMD_PORT=" + std::to_string(epmd_port_),
        "RABBITMQ_MNESIA_BASE=" + d + "/mnesia",
        "RABBITMQ_LOG_BASE=" + d + "/log",
        "RABBITMQ_CONFIG_FILE=" + d + "/rabbitmq.conf",
        "RABBITMQ_ENABLED_PLUGINS_FILE=" + d + "/enabled_plugins",
        "RABBITMQ_CONF_ENV_FILE=" + d + "/rabbitmq-env.conf",
        "RABBITMQ_PID_FILE=" + d + "/rabbitmq.pid",
    };
    pid_ = spawn({server_script}, env, dir_.file("server.out"), error);
    if (pid_ <= 0) {
        return false;
    }
    if (!wait_ready()) {
        error = "rabbitmq-server not ready within 90 s on port " + std::to_string(port_) + ": " +
                log_text();
        kill();
        return false;
    }
    return true;
}

bool rabbitmq_server::wait_ready() {
    return wait_ready_while_running(pid_, std::chrono::seconds(90), [&] {
        std::string why;
        // Ready once an AMQP login and channel succeed, not when the port opens.
        auto* c = connect_guest(port_, why);
        if (c == nullptr) {
            return false;
        }
        amqp_connection_close(c, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(c);
        return true;
    });
}

void rabbitmq_server::kill() {
    signal_and_reap(pid_, SIGKILL);
}

void rabbitmq_server::stop() {
    signal_and_reap(pid_, SIGTERM);
}

amqp_client::amqp_client(int port) : port_(port) {
    ensure();
}

amqp_client::~amqp_client() {
    reset();
}

void amqp_client::reset() {
    if (conn_ != nullptr) {
        auto c = static_cast<amqp_connection_state_t>(conn_);
        amqp_connection_close(c, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(c);
        conn_ = nullptr;
    }
}

bool amqp_client::ensure() {
    if (conn_ == nullptr) {
        conn_ = connect_guest(port_, error);
    }
    return conn_ != nullptr;
}

bool amqp_client::declare_queue(const std::string& name, const std::string& dead_letter_queue) {
    if (!ensure()) {
        return false;
    }
    auto c = static_cast<amqp_connection_state_t>(conn_);
    amqp_table_entry_t args[2];
    amqp_table_t table = amqp_empty_table;
    if (!dead_letter_queue.empty()) {
        args[0].key = amqp_cstring_bytes("x-dead-letter-exchange");
        args[0].value.kind = AMQP_FIELD_KIND_UTF8;
        args[0].value.value.bytes = amqp_cstring_bytes("");
        args[1].key = amqp_cstring_bytes("x-dead-letter-routing-key");
        args[1].value.kind = AMQP_FIELD_KIND_UTF8;
        args[1].value.value.bytes = amqp_cstring_bytes(dead_letter_queue.c_str());
        table = amqp_table_t{2, args};
    }
    amqp_queue_declare(c, 1, amqp_cstring_bytes(name.c_str()), 0, 1, 0, 0, table);
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) {
        error = "queue.declare " + name + " failed";
        reset();
        return false;
    }
    return true;
}

bool amqp_client::delete_queue(const std::string& name) {
    if (!ensure()) {
        return false;
    }
    auto c = static_cast<amqp_connection_state_t>(conn_);
    amqp_queue_delete(c, 1, amqp_cstring_bytes(name.c_str()), 0, 0);
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) {
        error = "queue.delete " + name + " failed";
        reset();
        return false;
    }
    return true;
}

bool amqp_client::publish(const std::string& queue, const std::string& body,
                          const std::string& message_id) {
    if (!ensure()) {
        return false;
    }
    auto c = static_cast<amqp_connection_state_t>(conn_);
    amqp_basic_properties_t props{};
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
    props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    props.content_type = amqp_cstring_bytes("application/json");
    if (!message_id.empty()) {
        props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
        props.message_id = amqp_cstring_bytes(message_id.c_str());
    }
    amqp_bytes_t b{body.size(), const_cast<char*>(body.data())};
    const int st = amqp_basic_publish(c, 1, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), 0,
                                      0, &props, b);
    if (st != AMQP_STATUS_OK) {
        error = std::string("publish: ") + amqp_error_string2(st);
        reset();
        return false;
    }
    return true;
}

std::optional<queue_depth> amqp_client::depth(const std::string& queue) {
    if (!ensure()) {
        return std::nullopt;
    }
    auto c = static_cast<amqp_connection_state_t>(conn_);
    auto* ok =
        amqp_queue_declare(c, 1, amqp_cstring_bytes(queue.c_str()), 1, 0, 0, 0, amqp_empty_table);
    if (ok == nullptr || amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) {
        error = "passive queue.declare " + queue + " failed";
        reset(); // a failed passive declare closes the channel
        return std::nullopt;
    }
    return queue_depth{ok->message_count, ok->consumer_count};
}

std::optional<std::pair<std::string, std::string>> amqp_client::get(const std::string& queue) {
    if (!ensure()) {
        return std::nullopt;
    }
    auto c = static_cast<amqp_connection_state_t>(conn_);
    auto r = amqp_basic_get(c, 1, amqp_cstring_bytes(queue.c_str()), 1);
    if (r.reply_type != AMQP_RESPONSE_NORMAL || r.reply.id != AMQP_BASIC_GET_OK_METHOD) {
        return std::nullopt;
    }
    amqp_message_t msg;
    if (amqp_read_message(c, 1, &msg, 0).reply_type != AMQP_RESPONSE_NORMAL) {
        reset();
        return std::nullopt;
    }
    std::pair<std::string, std::string> out;
    out.first.assign(static_cast<const char*>(msg.body.bytes), msg.body.len);
    if ((msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) != 0) {
        out.second.assign(static_cast<const char*>(msg.properties.message_id.bytes),
                          msg.properties.message_id.len);
    }
    amqp_destroy_message(&msg);
    return out;
}

} // namespace wopbridge::testing
