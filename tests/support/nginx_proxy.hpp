#pragma once
// A throwaway nginx (Debian's nginx-light) in front of a bridge, configured as the reverse-proxy
// section of docs/deployment.md says: X-Forwarded-For appended, X-Forwarded-Proto and Host set,
// plain HTTP on one loopback port and TLS (a self-signed certificate) on another.
#include <string>
#include <sys/types.h>

namespace wopbridge::testing {

class nginx_proxy {
public:
    nginx_proxy() = default;
    nginx_proxy(const nginx_proxy&) = delete;
    nginx_proxy& operator=(const nginx_proxy&) = delete;
    ~nginx_proxy();

    // Starts nginx under `dir` proxying to `upstream` ("127.0.0.1:PORT"). False with `error` set
    // when nginx is not installed or did not come up.
    bool start(const std::string& dir, const std::string& upstream);
    void stop();

    std::string http_url() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
    std::string https_url() const { return "https://127.0.0.1:" + std::to_string(https_port_); }
    std::string ca_file() const { return dir_ + "/cert.pem"; } // the certificate TLS presents
    std::string error;

private:
    std::string dir_;
    int http_port_ = 0;
    int https_port_ = 0;
    pid_t pid_ = -1;
};

// The nginx binary (it lives in /usr/sbin, off a non-root PATH); "" when not installed.
std::string nginx_binary();

} // namespace wopbridge::testing
