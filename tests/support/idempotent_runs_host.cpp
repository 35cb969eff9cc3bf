#include "support/idempotent_runs_host.hpp"

#include <boost/json.hpp>

namespace wopbridge::testing {

idempotent_runs_host::idempotent_runs_host(policy p) : policy_(std::move(p)) {
    server_ = std::make_unique<http_test_server>([this](const http_request& r) { return handle(r); });
    port_ = server_->port();
}

idempotent_runs_host::~idempotent_runs_host() {
    std::unique_ptr<http_test_server> s;
    {
        std::lock_guard lock(mu_);
        s = std::move(server_);
    }
    s.reset(); // joins connection threads before the state they use goes away
}

void idempotent_runs_host::set_policy(policy p) {
    std::lock_guard lock(mu_);
    policy_ = std::move(p);
}

void idempotent_runs_host::go_down() {
    std::unique_ptr<http_test_server> s;
    {
        std::lock_guard lock(mu_);
        s = std::move(server_);
    }
    s.reset();
}

void idempotent_runs_host::come_up() {
    auto s = std::make_unique<http_test_server>([this](const http_request& r) { return handle(r); },
                                                port_);
    std::lock_guard lock(mu_);
    server_ = std::move(s);
}

std::vector<runs_host_call> idempotent_runs_host::calls() const {
    std::lock_guard lock(mu_);
    return calls_;
}

std::vector<runs_host_call> idempotent_runs_host::calls_for(const std::string& key) const {
    std::lock_guard lock(mu_);
    std::vector<runs_host_call> out;
    for (const auto& c : calls_) {
        if (c.idempotency_key == key) {
            out.push_back(c);
        }
    }
    return out;
}

int idempotent_runs_host::runs_created() const {
    std::lock_guard lock(mu_);
    return next_ - 1;
}

std::map<std::string, std::string> idempotent_runs_host::runs_by_key() const {
    std::lock_guard lock(mu_);
    return runs_by_key_;
}

http_response idempotent_runs_host::handle(const http_request& req) {
    if (req.method != "POST" || req.target != "/v1/runs") {
        return {404, {{"Content-Type", "application/json"}}, R"({"error":"not_found"})"};
    }
    runs_host_call call;
    call.idempotency_key = req.header("idempotency-key");
    call.at = std::chrono::system_clock::now();
    boost::system::error_code ec;
    auto doc = boost::json::parse(req.body, ec);
    if (!ec && doc.is_object()) {
        if (const auto* w = doc.as_object().if_contains("workflowId"); w && w->is_string()) {
            call.workflow_id = std::string(w->as_string());
        }
    }
    std::unique_lock lock(mu_);
    int n = 0;
    for (const auto& c : calls_) {
        n += c.idempotency_key == call.idempotency_key ? 1 : 0;
    }
    call.nth_for_key = n + 1;
    calls_.push_back(call);
    policy p = policy_;
    lock.unlock();
    std::optional<http_response> over = p ? p(call) : std::nullopt;
    if (over && over->status != 0) {
        return *over;
    }
    lock.lock();
    std::string run_id;
    bool replay = false;
    if (!call.idempotency_key.empty() && runs_by_key_.count(call.idempotency_key)) {
        run_id = runs_by_key_[call.idempotency_key];
        replay = true;
    } else {
        run_id = "up_run_" + std::to_string(next_++);
        if (!call.idempotency_key.empty()) {
            runs_by_key_[call.idempotency_key] = run_id;
        }
    }
    lock.unlock();
    http_response r{201, {{"Content-Type", "application/json"}},
                    R"({"runId":")" + run_id + R"(","status":"running"})"};
    if (replay) {
        r.headers.emplace_back("openwop-Idempotent-Replay", "true");
    }
    if (over) {
        r.delay = over->delay; // created now, answered late (or never, if the caller is gone)
    }
    return r;
}

} // namespace wopbridge::testing
