// Connector instances from load to destroy: validate -> create -> start, subscriptions handed
// over and taken back, stop(deadline) -> drain -> destroy (or abandoned, when work never ends).
#include "plugins/connector_host_impl.hpp"

#include <algorithm>
#include <array>
#include <chrono>

namespace wopbridge {

using namespace plugin_detail;

std::shared_ptr<instance> connector_host::impl::find(const std::string& name) const {
    wopbridge::shared_lock lk(inst_mu);
    for (const auto& i : instances) {
        if (i->name == name) {
            return i;
        }
    }
    return nullptr;
}

module_error connector_host::impl::fail(instance& inst, std::string_view what) {
    return module_error{errc::internal,
                        inst.module.path + ": connector '" + inst.name + "' " + std::string(what)};
}

module_result<void> connector_host::impl::subscribe_locked(instance& inst, const std::string& id,
                                                           const sub_entry& entry) {
    {
        wopbridge::lock_guard lk(inst.mu);
        auto it = inst.subs.find(id);
        if (it != inst.subs.end() && it->second == entry) {
            return {}; // already subscribed with these settings
        }
    }
    const std::string ingest_url = options.public_url + "/v1/ingest/" + id;
    wb_subscription sub{};
    sub.struct_size = sizeof(wb_subscription);
    sub.id = str(id);
    sub.source = str(entry.source);
    sub.workflow_id = str(entry.workflow_id);
    sub.settings_json = str(entry.settings_json);
    sub.ingest_url = str(ingest_url);
    std::array<char, 512> buf{};
    wb_status st = WB_ERR_INTERNAL;
    try {
        st = inst.module.descriptor->subscribe(inst.conn, &sub, buf.data(), buf.size());
    } catch (...) {
        st = WB_ERR_INTERNAL;
    }
    buf.back() = '\0';
    if (st != WB_OK) {
        if (st == WB_ERR_INTERNAL) {
            inst.errors++;
        }
        const std::string reason = buf[0] != '\0' ? buf.data() : "status " + std::to_string(st);
        return fail(inst, "refused subscription " + id + ": " + reason);
    }
    wopbridge::lock_guard lk(inst.mu);
    inst.subs[id] = entry;
    return {};
}

// An instance abandoned at stop (work still in flight): its threads may still run module code,
// so the module stays mapped, and its connector object is never destroyed. Both stay reachable
// from this process-lifetime list, so a leak checker reports kept memory as kept, not lost.
void connector_host::impl::keep_for_process_life(std::shared_ptr<void> module, wb_connector* conn) {
    struct abandoned {
        std::shared_ptr<void> module;
        wb_connector* conn;
    };
    static std::mutex mu;
    static auto* const kept = new std::vector<abandoned>();
    wopbridge::lock_guard lk(mu);
    kept->push_back({std::move(module), conn});
}

module_result<void> connector_host::impl::stop_instance(instance& inst) {
    wopbridge::lock_guard control(inst.control_mu);
    const phase ph = inst.state.load();
    if (ph == phase::destroyed) {
        return {};
    }
    module_result<void> outcome;
    const millis deadline = clock.now_ms() + options.stop_timeout_ms;
    if (ph == phase::running || ph == phase::created) {
        inst.state = phase::stopping; // no new requests
        wb_status st = WB_ERR_INTERNAL;
        try {
            st = inst.module.descriptor->stop(inst.conn, deadline);
        } catch (...) {
            st = WB_ERR_INTERNAL;
        }
        if (st != WB_OK) {
            inst.errors++;
            outcome = fail(inst, "stop failed (status " + std::to_string(st) + ")");
        }
    }
    inst.state = phase::stopped; // no new submits or tasks

    // Queued tasks run now, early: the contract says they run with the host shutting down.
    std::vector<work_item> drained;
    {
        wopbridge::lock_guard lk(timer_mu);
        for (auto it = timers.begin(); it != timers.end();) {
            if (it->second.inst == &inst) {
                drained.push_back(std::move(it->second));
                it = timers.erase(it);
            } else {
                ++it;
            }
        }
    }
    {
        wopbridge::lock_guard lk(work_mu);
        for (auto it = work.begin(); it != work.end();) {
            if (it->inst == &inst) {
                drained.push_back(std::move(*it));
                it = work.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& item : drained) {
        run_guarded(item.fn);
    }

    // In-flight work finishes before destroy; a module that never lets go is leaked, not freed
    // under its own feet.
    bool idle = false;
    {
        wopbridge::unique_lock lk(inst.mu);
        idle = lk.wait_for(
            inst.cv, std::chrono::milliseconds(std::max<millis>(options.stop_timeout_ms, 1)),
            [&]() REQUIRES(inst.mu) {
                return inst.inflight_submits == 0 && inst.inflight_tasks == 0 &&
                       inst.active_calls == 0;
            });
    }
    answer_leftovers(&inst);
    if (!idle) {
        inst.errors++;
        host_log(inst, "error",
                 "in-flight work did not finish by the stop deadline; instance abandoned "
                 "(kept for the process's life)");
        keep_for_process_life(inst.module.handle, inst.conn);
        return fail(inst, "did not finish in-flight work by the stop deadline");
    }
    try {
        inst.module.descriptor->destroy(inst.conn);
    } catch (...) {
        inst.errors++;
    }
    inst.conn = nullptr;
    inst.state = phase::destroyed;
    {
        wopbridge::lock_guard lk(inst.mu);
        inst.subs.clear();
    }
    return outcome;
}

module_result<void> connector_host::add_instance(const connector_instance_config& config) {
    if (config.name.empty()) {
        return module_error{errc::invalid_argument, "connector instance: empty name"};
    }
    if (impl_->find(config.name)) {
        return module_error{errc::already_exists,
                            "connector instance '" + config.name + "' is defined twice"};
    }
    auto mod = load_module(config.module, impl_->options.module_dirs);
    if (!mod) {
        return mod.error();
    }
    const std::string settings = config.settings_json.empty() ? "{}" : config.settings_json;
    auto schemas = settings_schemas::compile(*mod);
    if (!schemas) {
        return schemas.error();
    }
    if (auto c = schemas->check_config(settings, config.name); !c) {
        return c.error();
    }
    if (auto v = mod->validate(settings); !v) {
        return redacted(v.error(), settings, schemas->config_secrets());
    }
    auto inst = std::make_shared<instance>();
    inst->name = config.name;
    inst->module = std::move(*mod);
    inst->schemas = std::move(*schemas);
    inst->settings_json = settings;
    inst->host_ctx.owner = impl_.get();
    inst->host_ctx.inst = inst.get();

    wopbridge::lock_guard control(inst->control_mu);
    const auto* d = inst->module.descriptor;
    std::array<char, 512> buf{};
    wb_status st = WB_ERR_INTERNAL;
    try {
        st = d->create(&impl_->api, reinterpret_cast<wb_host*>(&inst->host_ctx), str(settings),
                       &inst->conn, buf.data(), buf.size());
    } catch (...) {
        st = WB_ERR_INTERNAL;
    }
    buf.back() = '\0';
    if (st != WB_OK || inst->conn == nullptr) {
        const std::string reason = buf[0] != '\0' ? buf.data() : "status " + std::to_string(st);
        return redacted(
            {errc::invalid_argument, inst->module.path + ": config rejected: " + reason}, settings,
            inst->schemas.config_secrets());
    }
    try {
        st = d->start(inst->conn);
    } catch (...) {
        st = WB_ERR_INTERNAL;
    }
    if (st != WB_OK) {
        inst->errors++;
        try {
            d->destroy(inst->conn);
        } catch (...) {
        }
        inst->conn = nullptr;
        inst->state = phase::destroyed;
        wopbridge::lock_guard lk(impl_->inst_mu);
        impl_->retired.push_back(inst);
        return module_error{errc::internal, inst->module.path + ": connector '" + config.name +
                                                "' failed to start (status " + std::to_string(st) +
                                                ")"};
    }
    inst->state = phase::running;
    wopbridge::lock_guard lk(impl_->inst_mu);
    impl_->instances.push_back(std::move(inst));
    return {};
}

module_result<void>
connector_host::add_instances(const std::vector<connector_instance_config>& configs) {
    for (const auto& c : configs) {
        if (auto r = add_instance(c); !r) {
            return r;
        }
    }
    return {};
}

module_result<void> connector_host::subscribe(const subscription& sub) {
    auto inst = impl_->find(sub.connector);
    if (!inst) {
        return module_error{errc::not_found, "subscription " + sub.id + ": connector instance '" +
                                                 sub.connector + "' is not loaded"};
    }
    wopbridge::lock_guard control(inst->control_mu);
    if (inst->state.load() != phase::running) {
        return module_error{errc::conflict, "connector '" + inst->name + "' is not running"};
    }
    sub_entry entry{std::string(source_name(sub.source)),
                    sub.workflow_id,
                    {},
                    sub.connector_settings_json.empty() ? "{}" : sub.connector_settings_json};
    {
        // Unchanged (the connector sync asks again every pass): nothing opened or checked, no
        // module call.
        wopbridge::lock_guard lk(inst->mu);
        if (auto it = inst->subs.find(sub.id);
            it != inst->subs.end() && it->second.same_stored(entry)) {
            return {};
        }
    }
    auto opened = open_stored_settings(entry.stored_settings_json, impl_->options.box);
    if (!opened) {
        return module_error{errc::invalid_argument,
                            "settings of subscription " + sub.id +
                                " hold a sealed secret this host key cannot open (sealed under "
                                "another key, or altered)"};
    }
    entry.settings_json = std::move(*opened);
    {
        wopbridge::lock_guard lk(inst->mu);
        if (auto it = inst->subs.find(sub.id); it != inst->subs.end() && it->second == entry) {
            it->second.stored_settings_json = entry.stored_settings_json;
            return {};
        }
    }
    // Checked plain: the schema describes the values, not their sealed form.
    if (auto c = inst->schemas.check_subscription(entry.settings_json, sub.id); !c) {
        return c.error();
    }
    if (auto r = impl_->subscribe_locked(*inst, sub.id, entry); !r) {
        return redacted(r.error(), entry.settings_json, inst->schemas.subscription_secrets());
    }
    return {};
}

module_result<sealed_settings> connector_host::seal_settings(const std::string& connector,
                                                             std::string_view settings_json,
                                                             seal_mode mode) const {
    if (impl_->options.box == nullptr) {
        return module_error{errc::unsupported, "this host has no key to seal settings with"};
    }
    auto inst = impl_->find(connector);
    const auto fields =
        inst ? inst->schemas.subscription_secrets() : secret_fields::every_setting();
    wopbridge::lock_guard lk(impl_->random_mu);
    auto r = seal_secret_settings(settings_json, fields, *impl_->options.box, impl_->random, mode);
    if (!r) {
        return module_error{errc::invalid_argument,
                            "settings must be a JSON object without the key \"$sealed\" (reserved "
                            "for secrets sealed at rest)"};
    }
    return std::move(*r);
}

module_result<void> connector_host::unsubscribe(const std::string& connector,
                                                const std::string& subscription_id) {
    auto inst = impl_->find(connector);
    if (!inst) {
        return {};
    }
    wopbridge::lock_guard control(inst->control_mu);
    if (inst->state.load() != phase::running || !inst->subscribed(subscription_id)) {
        return {};
    }
    wb_status st = WB_ERR_INTERNAL;
    try {
        st = inst->module.descriptor->unsubscribe(inst->conn, str(subscription_id));
    } catch (...) {
        st = WB_ERR_INTERNAL;
    }
    {
        // Forgotten either way: the host stops routing and accepting submits for it.
        wopbridge::lock_guard lk(inst->mu);
        inst->subs.erase(subscription_id);
    }
    if (st != WB_OK) {
        inst->errors++;
        return impl_->fail(*inst, "failed to unsubscribe " + subscription_id + " (status " +
                                      std::to_string(st) + ")");
    }
    return {};
}

module_result<void> connector_host::remove_instance(const std::string& name) {
    std::shared_ptr<instance> inst = impl_->find(name);
    if (!inst) {
        return {};
    }
    // Stays findable while it stops, so its requests are answered 503 rather than 404.
    auto outcome = impl_->stop_instance(*inst);
    wopbridge::lock_guard lk(impl_->inst_mu);
    auto& v = impl_->instances;
    if (auto it = std::find(v.begin(), v.end(), inst); it != v.end()) {
        v.erase(it);
        impl_->retired.push_back(inst);
    }
    return outcome;
}

void connector_host::stop_all() {
    if (!impl_) {
        return;
    }
    std::vector<std::string> names;
    {
        wopbridge::shared_lock lk(impl_->inst_mu);
        for (auto it = impl_->instances.rbegin(); it != impl_->instances.rend(); ++it) {
            names.push_back((*it)->name);
        }
    }
    for (const auto& n : names) {
        if (auto r = remove_instance(n); !r) {
            impl_->emit_log("error", n, r.error().message);
        }
    }
}

} // namespace wopbridge
