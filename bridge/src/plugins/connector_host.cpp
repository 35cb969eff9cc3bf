#include "plugins/connector_host_impl.hpp"

#include <algorithm>
#include <set>

namespace wopbridge {

using namespace plugin_detail;

// ---- connector_host -----------------------------------------------------------------------------

connector_host::connector_host(connector_host_options options, submit_sink& sink,
                               clock_source& clock, random_source& random)
    : impl_(std::make_unique<impl>(std::move(options), sink, clock, random)) {}

connector_host::~connector_host() {
    stop_all();
    impl_.reset(); // joins the threads before the modules are unloaded
}

std::optional<pending_request> connector_host::impl::take_pending(std::uint64_t id) {
    wopbridge::lock_guard lk(req_mu);
    auto it = pending.find(id);
    if (it == pending.end()) {
        return std::nullopt;
    }
    pending_request p = std::move(it->second);
    pending.erase(it);
    return p;
}

void connector_host::impl::deliver(pending_request& p, ingest_reply reply) noexcept {
    try {
        p.reply(std::move(reply));
    } catch (...) {
    }
}

void connector_host::impl::expire(std::uint64_t id) {
    auto p = take_pending(id);
    if (!p) {
        return; // answered in time
    }
    p->inst->timeouts++;
    p->inst->errors++;
    host_log(*p->inst, "warn",
             "no response within " + std::to_string(options.respond_timeout_ms) +
                 " ms; the host answered 503");
    deliver(*p, ingest_reply{
                    503,
                    {{"content-type", "application/json"}, {"retry-after", "1"}},
                    error_body("service_unavailable", "the connector did not answer in time")});
}

// Answers every request of `inst` still open (used when it stops).
void connector_host::impl::answer_leftovers(instance* inst) {
    std::vector<pending_request> left;
    {
        wopbridge::lock_guard lk(req_mu);
        for (auto it = pending.begin(); it != pending.end();) {
            if (it->second.inst == inst) {
                left.push_back(std::move(it->second));
                it = pending.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& p : left) {
        deliver(p, ingest_reply{503,
                                {{"content-type", "application/json"}, {"retry-after", "1"}},
                                error_body("service_unavailable", "the connector is stopping")});
    }
}

bool connector_host::serves(const subscription& sub) const {
    if (sub.connector.empty()) {
        return false;
    }
    auto inst = impl_->find(sub.connector);
    return inst && (inst->module.capabilities & WB_CAP_HTTP_INGEST) != 0 &&
           inst->module.descriptor->on_http_request != nullptr;
}

void connector_host::handle(const subscription& sub, const inbound_http_request& req,
                            ingest_reply_callback reply) {
    auto inst = impl_->find(sub.connector);
    if (!inst || (inst->module.capabilities & WB_CAP_HTTP_INGEST) == 0 ||
        inst->module.descriptor->on_http_request == nullptr) {
        reply(ingest_reply{404,
                           {{"content-type", "application/json"}},
                           error_body("not_found", "no connector serves this subscription")});
        return;
    }
    bool running = false;
    bool full = false;
    {
        wopbridge::lock_guard lk(inst->mu);
        running = inst->state.load() == phase::running;
        full = inst->active_calls >= std::max(1, impl_->options.max_calls_per_instance) &&
               inst->queued_calls.size() >= impl_->options.max_queued_calls;
    }
    if (!running) {
        reply(ingest_reply{503,
                           {{"content-type", "application/json"}, {"retry-after", "1"}},
                           error_body("service_unavailable", "the connector is not running")});
        return;
    }
    if (full) {
        inst->busy++;
        inst->errors++;
        reply(ingest_reply{503,
                           {{"content-type", "application/json"}, {"retry-after", "1"}},
                           error_body("service_unavailable", "the connector is busy")});
        return;
    }
    std::uint64_t id = 0;
    {
        wopbridge::lock_guard lk(impl_->req_mu);
        id = impl_->next_request++;
        impl_->pending.emplace(id, pending_request{inst.get(), std::move(reply)});
    }
    impl_->schedule(impl_->clock.now_ms() + impl_->options.respond_timeout_ms,
                    work_item{nullptr, [im = impl_.get(), id] { im->expire(id); }});

    {
        // Checked under mu so stop_instance's idle wait sees this call.
        wopbridge::lock_guard lk(inst->mu);
        if (inst->active_calls >= std::max(1, impl_->options.max_calls_per_instance)) {
            inst->queued_calls.push_back([im = impl_.get(), inst, sub_id = sub.id, req, id] {
                im->call(*inst, sub_id, req, id);
            });
            return; // the thread that frees a slot runs it
        }
        ++inst->active_calls;
    }
    impl_->call(*inst, sub.id, req, id);
    // Keep the slot while requests queued behind a slow call are waiting: run them here.
    for (;;) {
        std::function<void()> next;
        {
            wopbridge::lock_guard lk(inst->mu);
            if (inst->queued_calls.empty()) {
                --inst->active_calls;
                inst->cv.notify_all();
                break;
            }
            next = std::move(inst->queued_calls.front());
            inst->queued_calls.pop_front();
        }
        next();
    }
}

void connector_host::impl::call(instance& inst, const std::string& sub_id,
                                const inbound_http_request& req, std::uint64_t id) {
    {
        // A queued request may have been answered meanwhile (its deadline, or a stop).
        wopbridge::lock_guard lk(req_mu);
        if (!pending.count(id)) {
            return;
        }
    }
    if (inst.state.load() != phase::running) {
        return; // stop_instance answers what is left
    }
    std::vector<std::string> names;
    names.reserve(req.headers.size());
    for (const auto& h : req.headers) {
        names.push_back(lower(h.first));
    }
    std::vector<wb_header> headers;
    headers.reserve(req.headers.size());
    for (std::size_t i = 0; i < req.headers.size(); ++i) {
        headers.push_back(wb_header{str(names[i]), str(req.headers[i].second)});
    }
    // The URL the provider called: what a trusted proxy said, else server.publicUrl.
    const std::string public_url =
        (req.public_base.empty() ? options.public_url : req.public_base) + req.target;
    wb_http_request r{};
    r.struct_size = sizeof(wb_http_request);
    r.subscription_id = str(sub_id);
    r.method = str(req.method);
    r.target = str(req.target);
    r.public_url = str(public_url);
    r.headers = headers.data();
    r.header_count = headers.size();
    r.body = str(req.body);
    r.remote_address = str(req.remote_address);
    r.received_at_ms = clock.now_ms();

    inst.requests++;
    bool threw = false;
    try {
        inst.module.descriptor->on_http_request(inst.conn, reinterpret_cast<wb_request_ctx*>(id),
                                                &r);
    } catch (...) {
        threw = true;
    }
    if (threw) {
        inst.errors++;
        host_log(inst, "error", "exception escaped on_http_request; the host answered 500");
        if (auto p = take_pending(id)) {
            deliver(*p, ingest_reply{500,
                                     {{"content-type", "application/json"}},
                                     error_body("internal_error", "the connector failed")});
        }
    }
}

std::vector<std::string> connector_host::sources() const {
    std::set<std::string> out;
    wopbridge::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        out.insert(i->module.source);
    }
    return {out.begin(), out.end()};
}

std::vector<std::string> connector_host::queue_backends() const {
    // The in-tree queue modules by engine; a vendor's queue module counts when its name is one
    // of the contract's backend names (queueBus.backends is a closed enum).
    static const std::set<std::string> contract_names = {
        "rabbitmq", "kafka", "sqs", "sns", "pubsub", "mqtt", "nats", "redis-streams", "in-memory"};
    std::set<std::string> out;
    wopbridge::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        if (i->module.source != "queue") {
            continue;
        }
        const std::string& name = i->module.name;
        if (name == "queue") {
            out.insert("redis-streams");
        } else if (contract_names.count(name) > 0) {
            out.insert(name);
        }
    }
    return {out.begin(), out.end()};
}

std::vector<std::string> connector_host::connector_names() const {
    std::vector<std::string> out;
    wopbridge::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        out.push_back(i->name);
    }
    return out;
}

result<void, error_info> connector_host::attach(const subscription& sub) {
    if (auto r = subscribe(sub); !r) {
        return error_info{r.error().code, r.error().message};
    }
    return {};
}

void connector_host::detach(const subscription& sub) {
    if (!sub.connector.empty()) {
        (void)unsubscribe(sub.connector, sub.id);
    }
}

std::vector<connector_instance_info> connector_host::instances() const {
    std::vector<connector_instance_info> out;
    wopbridge::shared_lock lk(impl_->inst_mu);
    for (const auto& i : impl_->instances) {
        connector_instance_info info;
        info.name = i->name;
        info.module_name = i->module.name;
        info.module_path = i->module.path;
        info.version = i->module.version;
        info.source = i->module.source;
        info.capabilities = i->module.capabilities;
        info.running = i->state.load() == phase::running;
        {
            wopbridge::lock_guard il(i->mu);
            for (const auto& [id, _] : i->subs) {
                info.subscriptions.push_back(id);
            }
        }
        info.stats = stats_of(*i);
        out.push_back(std::move(info));
    }
    return out;
}

std::optional<connector_stats> connector_host::stats(const std::string& name) const {
    std::shared_ptr<instance> inst = impl_->find(name);
    if (!inst) {
        wopbridge::shared_lock lk(impl_->inst_mu);
        for (const auto& i : impl_->retired) {
            if (i->name == name) {
                inst = i;
            }
        }
    }
    if (!inst) {
        return std::nullopt;
    }
    return stats_of(*inst);
}

std::uint64_t connector_host::errors(const std::string& name) const {
    auto s = stats(name);
    return s ? s->errors : 0;
}

} // namespace wopbridge
