#include "support/nginx_proxy.hpp"

#include "support/local_server_process.hpp"
#include "support/raw_socket.hpp"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace wopbridge::testing {

std::string nginx_binary() {
    for (const char* candidate : {"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"}) {
        if (::access(candidate, X_OK) == 0) {
            return candidate;
        }
    }
    return {};
}

nginx_proxy::~nginx_proxy() { stop(); }

void nginx_proxy::stop() { signal_and_reap(pid_, SIGQUIT); }

bool nginx_proxy::start(const std::string& dir, const std::string& upstream) {
    const std::string nginx = nginx_binary();
    if (nginx.empty()) {
        error = "nginx is not installed (scripts/setup-debian.sh proxy installs nginx-light)";
        return false;
    }
    dir_ = dir;
    std::filesystem::create_directories(dir_ + "/temp");
    if (std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                     "-addext subjectAltName=IP:127.0.0.1 -keyout '" + dir_ + "/key.pem' -out '" +
                     dir_ + "/cert.pem' >/dev/null 2>&1")
                        .c_str()) != 0) {
        error = "openssl could not make the proxy's certificate";
        return false;
    }
    http_port_ = free_loopback_port();
    https_port_ = free_loopback_port();
    const std::string temp = dir_ + "/temp";
    std::ofstream(dir_ + "/nginx.conf")
        << "daemon off;\nmaster_process on;\nworker_processes 1;\n"
        << (::geteuid() == 0 ? "user root;\n" : "") // else the worker runs as nobody
        << "pid " << dir_ << "/nginx.pid;\nerror_log " << dir_ << "/error.log warn;\n"
        << "events { worker_connections 1024; }\n"
           "http {\n  access_log off;\n"
        << "  client_body_temp_path " << temp << "/body;\n  proxy_temp_path " << temp << "/proxy;\n"
        << "  fastcgi_temp_path " << temp << "/fastcgi;\n  uwsgi_temp_path " << temp << "/uwsgi;\n"
        << "  scgi_temp_path " << temp << "/scgi;\n"
        << "  upstream bridge { server " << upstream << "; keepalive 16; }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << http_port_ << ";\n"
        << "    listen 127.0.0.1:" << https_port_ << " ssl;\n"
        << "    ssl_certificate " << dir_ << "/cert.pem;\n    ssl_certificate_key " << dir_
        << "/key.pem;\n"
           "    location / {\n"
           "      proxy_pass http://bridge;\n"
           "      proxy_http_version 1.1;\n"
           "      proxy_set_header Connection \"\";\n"
           "      proxy_set_header Host $http_host;\n"
           "      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
           "      proxy_set_header X-Forwarded-Proto $scheme;\n"
           "    }\n  }\n}\n";
    server_spawn s;
    s.argv = {nginx, "-p", dir_, "-c", dir_ + "/nginx.conf"};
    s.output_file = dir_ + "/nginx.out";
    if (int e = spawn_server(s, pid_); e != 0) {
        error = "cannot start nginx: errno " + std::to_string(e);
        return false;
    }
    const bool up = wait_ready_while_running(pid_, std::chrono::seconds(30), [&] {
        return raw_connection(static_cast<std::uint16_t>(http_port_)).connected() &&
               raw_connection(static_cast<std::uint16_t>(https_port_)).connected();
    });
    if (!up) {
        error = "nginx did not come up (" + dir_ + "/error.log)";
        stop();
    }
    return up;
}

} // namespace wopbridge::testing
