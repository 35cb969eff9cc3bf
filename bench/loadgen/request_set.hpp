#pragma once
// Pre-signed requests for the load generator: every body, header and signature is computed and the
// whole HTTP/1.1 request serialised before the clock starts, so the send path only writes prepared
// bytes to a socket. `bench-loadgen dump` writes the same bytes to a file for wrk (bench/wrk/).

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace wopbridge::bench {

// http://HOST:PORT/PATH (plain HTTP only: the benchmarks run on loopback).
struct target {
    std::string host;        // as given (an IPv4/IPv6 literal or a name)
    std::uint16_t port = 80;
    std::string path = "/";  // with the query, if any
    std::string host_header; // host[:port] as sent in Host:
};
// Empty host on a URL it cannot read.
target parse_url(const std::string& url);

enum class request_kind { standard_webhook, slack_event };

struct request_set_options {
    request_kind kind = request_kind::standard_webhook;
    std::string secret;          // whsec_<base64> (Standard Webhooks) or the Slack signing secret
    std::string id_prefix;       // webhook-id / event_id prefix; unique per run
    double duplicate_ratio = 0;  // share of requests that repeat an earlier id (same bytes)
    // > 0: every id is drawn from [0, reuse_existing) of `existing_prefix` (ids stored beforehand,
    // so every request is a duplicate: the dedup lookup against a large table).
    std::uint64_t reuse_existing = 0;
    std::string existing_prefix;
    std::uint32_t seed = 7;
    target to;                   // Host: and request target of the serialised requests
};

struct prepared_request {
    std::string wire;        // the whole request: request line, headers, body
    bool duplicate = false;
};

class request_set {
public:
    request_set() = default;
    request_set(const request_set&) = delete;
    request_set& operator=(const request_set&) = delete;

    // Appends n requests.
    void build(const request_set_options& opts, std::size_t n);
    std::size_t size() const noexcept { return requests_.size(); }
    const prepared_request& operator[](std::size_t i) const noexcept { return requests_[i]; }

private:
    std::vector<prepared_request> requests_;
    std::uint64_t next_id_ = 0; // ids stay unique across build() calls
};

// Standard Webhooks "v1,<base64>" and Slack "v0=<hex>" signatures.
std::string sign_standard_webhook(const std::string& secret, const std::string& id, std::int64_t ts,
                                  const std::string& body);
std::string sign_slack(const std::string& secret, const std::string& ts, const std::string& body);

} // namespace wopbridge::bench
