#include "plugins/check_phases.hpp"

#include "plugins/check_host.hpp"
#include "plugins/module_loader.hpp"

#include "wopbridge/connector.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge::check_kit {
namespace {

constexpr std::string_view kit_subscription = "kit-sub-1";

// One module instance driven through the lifecycle; destroying it shuts the module down, so an
// early return from a phase still stops and destroys what it created.
struct instance {
    const wb_connector_descriptor* d = nullptr;
    checking_host host;
    wb_connector* conn = nullptr;
    bool started = false;
    bool stopped = false;

    instance(const wb_connector_descriptor* desc, int outcome_delay)
        : d(desc), host(outcome_delay) {}

    wb_status create(const std::string& config, std::string& error) {
        std::array<char, 512> buf{};
        const wb_status st = d->create(host.api(), host.handle(), str(config), &conn, buf.data(),
                                       buf.size());
        error = buf_text(buf);
        if (st == WB_OK && conn == nullptr) {
            error = "create returned WB_OK without an instance";
            return WB_ERR_INTERNAL;
        }
        return st;
    }

    wb_status subscribe(const std::string& id, const std::string& settings, std::string& error) {
        host.allow_subscription(id);
        const std::string url = std::string(public_base) + "/v1/ingest/" + id;
        wb_subscription sub{};
        sub.struct_size = sizeof(wb_subscription);
        sub.id = str(id);
        sub.source = str(d->source);
        sub.workflow_id = str("wf-kit");
        sub.settings_json = str(settings);
        sub.ingest_url = str(url);
        std::array<char, 512> buf{};
        const wb_status st = d->subscribe(conn, &sub, buf.data(), buf.size());
        error = buf_text(buf);
        return st;
    }

    // stop -> queued tasks and outcomes -> destroy. Returns the stop status.
    wb_status shut_down(std::int64_t deadline_ms, std::chrono::milliseconds drain_timeout) {
        wb_status st = WB_OK;
        if (conn != nullptr && !stopped) {
            st = d->stop(conn, deadline_ms);
            stopped = true;
        }
        host.drain(drain_timeout);
        if (conn != nullptr) {
            d->destroy(conn);
            conn = nullptr;
            host.mark_destroyed();
        }
        return st;
    }

    ~instance() {
        if (conn != nullptr) {
            shut_down(wall_ms() + 2000, std::chrono::seconds(5));
        }
    }
};

std::string describe_reply(const http_reply& r) {
    if (!r.responded) {
        return "no response";
    }
    return "answered " + std::to_string(r.status);
}

std::chrono::milliseconds ms(int v) {
    return std::chrono::milliseconds(v);
}

// Repeats collapse into "<what> (xN)".
std::string violations_text(const std::vector<std::string>& v) {
    std::vector<std::pair<std::string, int>> seen;
    for (const auto& x : v) {
        auto it =
            std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == x; });
        if (it == seen.end()) {
            seen.emplace_back(x, 1);
        } else {
            ++it->second;
        }
    }
    std::string s;
    for (const auto& [what, n] : seen) {
        s += (s.empty() ? "" : "; ") + what + (n > 1 ? " (x" + std::to_string(n) + ")" : "");
    }
    return s;
}

void report_protocol(std::string_view name, const checking_host& host, reporter& out) {
    const auto v = host.violations();
    if (v.empty()) {
        out.pass(name, "no host protocol violations");
    } else {
        out.fail(name, violations_text(v));
    }
}

// The probe request with its credentials taken away (every header but content-type dropped; only
// `verified` is judged). A module that submits that as verified would vouch for anyone's request.
void check_unsigned_copy(phase_context& c, instance& inst, const std::string& sub,
                         std::chrono::milliseconds timeout) {
    reporter& out = c.out;
    constexpr std::string_view name = "http.unsigned-copy-not-verified";
    if (!c.opt.has_probe_request) {
        out.skip(name, "pass --probe-request FILE (a signed request) to check that its unsigned "
                       "copy is not submitted as verified");
        return;
    }
    out.begin(name);
    probe_request copy;
    copy.target = c.opt.probe.target;
    copy.body = c.opt.probe.body;
    for (const auto& [k, v] : c.opt.probe.headers) {
        if (k == "content-type") {
            copy.headers.emplace_back(k, v);
        }
    }
    const auto before = inst.host.submits().size();
    const http_reply r = inst.host.send(inst.d, inst.conn, copy, sub, wall_ms(), timeout);
    const auto made = inst.host.submits();
    if (made.size() > before && made.back().verified) {
        out.fail(name, "the probe request without its signature headers was submitted as "
                       "verified (" + describe_reply(r) + ")");
    } else if (made.size() > before) {
        out.pass(name, "its unsigned copy was submitted with verified=false");
    } else {
        out.pass(name, "its unsigned copy was refused (" + describe_reply(r) + ")");
    }
}

} // namespace

void phase_lifecycle(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    const auto& o = c.opt;
    instance inst(m->descriptor, o.outcome_delay_ms);
    std::string error;
    const std::array<std::string_view, 7> rest = {
        "lifecycle.start",  "lifecycle.subscribe",  "lifecycle.subscribe-idempotent",
        "lifecycle.unsubscribe-unknown", "lifecycle.stop", "lifecycle.destroy",
        "lifecycle.host-protocol"};
    auto skip_from = [&](std::size_t i, const std::string& why) {
        for (; i < rest.size(); ++i) {
            out.skip(rest[i], why);
        }
    };
    out.begin("lifecycle.create");
    if (wb_status st = inst.create(o.config_json, error); st != WB_OK) {
        out.fail("lifecycle.create", status_name(st) + (error.empty() ? "" : ": " + error));
        skip_from(0, "create failed");
        return;
    }
    out.pass("lifecycle.create", "create() returned an instance");
    out.begin("lifecycle.start");
    if (wb_status st = m->descriptor->start(inst.conn); st != WB_OK) {
        out.fail("lifecycle.start", "start() returned " + status_name(st));
    } else {
        out.pass("lifecycle.start", "start() returned WB_OK");
    }
    const std::string sub(kit_subscription);
    out.begin("lifecycle.subscribe");
    wb_status st = inst.subscribe(sub, o.subscription_settings_json, error);
    if (st != WB_OK && !o.subscription_settings_given && st == WB_ERR_INVALID) {
        out.skip("lifecycle.subscribe",
                 "the module needs subscription settings (" + error +
                     "); pass --subscription-settings to run the subscribe, http and submit checks");
    } else if (st != WB_OK) {
        out.fail("lifecycle.subscribe", "subscribe() returned " + status_name(st) +
                                            (error.empty() ? "" : ": " + error));
    } else {
        out.pass("lifecycle.subscribe", "subscribe() returned WB_OK");
    }
    out.begin("lifecycle.subscribe-idempotent");
    if (st == WB_OK) {
        st = inst.subscribe(sub, o.subscription_settings_json, error);
        if (st != WB_OK) {
            out.fail("lifecycle.subscribe-idempotent",
                     "subscribing the same id twice returned " + status_name(st) +
                         (error.empty() ? "" : ": " + error));
        } else {
            out.pass("lifecycle.subscribe-idempotent", "subscribing the same id twice is WB_OK");
        }
    } else {
        out.skip("lifecycle.subscribe-idempotent", "the first subscribe failed");
    }
    out.begin("lifecycle.unsubscribe-unknown");
    st = m->descriptor->unsubscribe(inst.conn, str("kit-never-subscribed"));
    if (st != WB_OK) {
        out.fail("lifecycle.unsubscribe-unknown",
                 "unsubscribing an unknown id returned " + status_name(st));
    } else {
        out.pass("lifecycle.unsubscribe-unknown", "unsubscribing an unknown id is WB_OK");
    }
    out.begin("lifecycle.stop");
    const std::int64_t deadline = wall_ms() + o.stop_grace_ms;
    st = m->descriptor->stop(inst.conn, deadline);
    const std::int64_t returned = wall_ms();
    inst.stopped = true;
    if (st != WB_OK) {
        out.fail("lifecycle.stop", "stop() returned " + status_name(st));
    } else if (returned > deadline) {
        out.fail("lifecycle.stop", "stop() returned " + std::to_string(returned - deadline) +
                                       " ms after its deadline");
    } else {
        out.pass("lifecycle.stop", "stop() returned WB_OK " + std::to_string(deadline - returned) +
                                       " ms before its deadline");
    }
    out.begin("lifecycle.destroy");
    const bool drained = inst.host.drain(ms(o.stop_grace_ms));
    inst.shut_down(deadline, ms(o.stop_grace_ms));
    if (!drained) {
        out.fail("lifecycle.destroy", "queued tasks or submit outcomes did not finish after stop");
    } else {
        out.pass("lifecycle.destroy", "queued tasks ran after stop; destroy() returned");
    }
    report_protocol("lifecycle.host-protocol", inst.host, out);
}

void phase_http(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    const auto& o = c.opt;
    const std::array<std::string_view, 5> http_checks = {
        "http.respond-deadline", "http.refuses-unsigned", "http.respond-after-outcome",
        "http.unsigned-copy-not-verified", "http.host-protocol"};
    const std::array<std::string_view, 4> submit_checks = {
        "submit.after-commit", "submit.duplicate", "submit.refused-not-active",
        "submit.refused-overloaded"};
    auto skip_all = [&](const std::string& why) {
        for (auto n : http_checks) {
            out.skip(n, why);
        }
        for (auto n : submit_checks) {
            out.skip(n, why);
        }
    };
    if ((m->capabilities & WB_CAP_HTTP_INGEST) == 0) {
        skip_all("no WB_CAP_HTTP_INGEST capability");
        return;
    }
    instance inst(m->descriptor, o.outcome_delay_ms);
    std::string error;
    out.begin("http.respond-deadline");
    if (inst.create(o.config_json, error) != WB_OK ||
        m->descriptor->start(inst.conn) != WB_OK) {
        skip_all("the instance did not start (see lifecycle.*)");
        return;
    }
    std::string sub(kit_subscription);
    if (o.has_probe_request) {
        // The probe names the subscription it was signed for.
        constexpr std::string_view prefix = "/v1/ingest/";
        if (o.probe.target.rfind(prefix, 0) == 0) {
            std::string rest = o.probe.target.substr(prefix.size());
            rest = rest.substr(0, rest.find_first_of("/?"));
            if (!rest.empty()) {
                sub = rest;
            }
        }
    }
    if (inst.subscribe(sub, o.subscription_settings_json, error) != WB_OK) {
        skip_all("subscribe failed (see lifecycle.subscribe)");
        return;
    }
    const auto timeout = ms(o.respond_timeout_ms + o.outcome_delay_ms);

    probe_request unsigned_probe;
    unsigned_probe.target = "/v1/ingest/" + sub;
    unsigned_probe.headers = {{"user-agent", "wopbridge-connector-check"},
                              {"content-length", "0"}};
    const std::int64_t t0 = wall_ms();
    const auto before = inst.host.submits().size();
    const http_reply r1 =
        inst.host.send(m->descriptor, inst.conn, unsigned_probe, sub, t0, timeout);
    const auto made = inst.host.submits();
    const std::size_t submitted = made.size() - before;
    if (!r1.responded) {
        out.fail("http.respond-deadline",
                 "no respond() within " + std::to_string(timeout.count()) + " ms");
    } else {
        out.pass("http.respond-deadline",
                 "answered " + std::to_string(r1.status) + " after " +
                     std::to_string(r1.elapsed_ms) + " ms");
    }
    bool probe_submitted = false;
    if (submitted == 0) {
        if (r1.responded && r1.status >= 400 && r1.status < 500) {
            out.pass("http.refuses-unsigned",
                     "an unsigned empty request is refused with " + std::to_string(r1.status) +
                         " and nothing submitted");
        } else {
            const auto logged = inst.host.error_logs();
            out.fail("http.refuses-unsigned",
                     "an unsigned empty request was " + describe_reply(r1) +
                         " (want a 4xx refusal)" +
                         (logged.empty() ? "" : "; module logged: " + violations_text(logged)));
        }
    } else if (made.back().verified) {
        out.fail("http.refuses-unsigned",
                 "an unsigned empty request was submitted as verified (" + describe_reply(r1) +
                     ")");
        probe_submitted = true;
    } else {
        out.skip("http.refuses-unsigned",
                 "the module accepts unsigned requests under this configuration (submitted "
                 "verified=false, " + describe_reply(r1) + ")");
        probe_submitted = true;
    }
    if (submitted == 0) {
        out.skip("http.respond-after-outcome", "nothing was submitted");
    } else if (r1.answered_before_outcome) {
        out.fail("http.respond-after-outcome",
                 "the module responded before the submit outcome arrived");
    } else {
        out.pass("http.respond-after-outcome", "responded only after the delayed submit outcome");
    }

    // The submit checks replay a request that submits: --probe-request, else the unsigned probe.
    const probe_request* probe = nullptr;
    http_reply first;
    std::int64_t received_at = t0;
    if (o.has_probe_request) {
        probe = &o.probe;
        received_at = wall_ms();
        out.begin("submit.after-commit");
        first = inst.host.send(m->descriptor, inst.conn, *probe, sub, received_at, timeout);
    } else if (probe_submitted) {
        probe = &unsigned_probe;
        first = r1;
    }
    if (probe == nullptr) {
        for (auto n : submit_checks) {
            out.skip(n, "the module submitted nothing for the unsigned probe (it needs a signed "
                        "request); pass --probe-request FILE to exercise the submit path");
        }
    } else if (first.submits == 0) {
        out.fail("submit.after-commit",
                 "the probe request submitted nothing (" + describe_reply(first) + ")");
        for (std::size_t i = 1; i < submit_checks.size(); ++i) {
            out.skip(submit_checks[i], "the probe request did not submit");
        }
    } else {
        if (!first.responded) {
            out.fail("submit.after-commit", "no response to the submitted request");
        } else if (first.answered_before_outcome) {
            out.fail("submit.after-commit", "answered " + std::to_string(first.status) +
                                                " before the submit outcome arrived");
        } else if (first.status < 200 || first.status > 299) {
            out.fail("submit.after-commit", "an accepted submit was answered " +
                                                std::to_string(first.status) + " (want 2xx)");
        } else {
            out.pass("submit.after-commit", "answered " + std::to_string(first.status) +
                                                " only after the accepted outcome");
        }
        const auto first_id = inst.host.submits().back().provider_event_id;

        out.begin("submit.duplicate");
        const http_reply dup =
            inst.host.send(m->descriptor, inst.conn, *probe, sub, received_at, timeout);
        const auto after_dup = inst.host.submits();
        if (dup.submits == 0) {
            out.skip("submit.duplicate", "the replayed request was not submitted (" +
                                             describe_reply(dup) + "; replay protection?)");
        } else if (after_dup.back().provider_event_id != first_id) {
            out.fail("submit.duplicate",
                     "an identical request got a different provider_event_id, so retries of it "
                     "would start a second run");
        } else if (!dup.responded || dup.status < 200 || dup.status > 299 ||
                   dup.answered_before_outcome) {
            out.fail("submit.duplicate", "a duplicate outcome was " + describe_reply(dup) +
                                             (dup.answered_before_outcome ? " early" : "") +
                                             " (want 2xx after the outcome)");
        } else {
            out.pass("submit.duplicate",
                     "same provider_event_id, duplicate answered " + std::to_string(dup.status));
        }

        struct refusal {
            std::string_view check;
            std::string reason;
            int retry_after;
        };
        const std::array<refusal, 2> refusals = {
            refusal{"submit.refused-not-active", "subscription_not_active", 0},
            refusal{"submit.refused-overloaded", "overloaded", 7}};
        for (const refusal& rf : refusals) {
            out.begin(rf.check);
            inst.host.script_refusal(rf.reason, rf.retry_after);
            const http_reply r =
                inst.host.send(m->descriptor, inst.conn, *probe, sub, received_at, timeout);
            inst.host.script_refusal({}, 0);
            if (r.submits == 0) {
                out.skip(rf.check, "the replayed request was not submitted (" + describe_reply(r) +
                                       ")");
                continue;
            }
            if (!r.responded || r.answered_before_outcome) {
                out.fail(rf.check, "refused outcome " + rf.reason + ": " + describe_reply(r) +
                                       (r.answered_before_outcome ? " before the outcome" : ""));
            } else if (r.status >= 200 && r.status < 300) {
                out.fail(rf.check, "refused outcome " + rf.reason + " was answered " +
                                       std::to_string(r.status) +
                                       ": the provider will not retry an event nothing committed");
            } else if (rf.retry_after > 0 && r.status != 429 && r.status < 500) {
                out.fail(rf.check, "overloaded was answered " + std::to_string(r.status) +
                                       " (want 503 or 429 so the provider retries)");
            } else {
                std::string why = "refused outcome " + rf.reason + " answered " +
                                  std::to_string(r.status);
                if (rf.retry_after > 0) {
                    why += r.has_header("retry-after") ? " with Retry-After"
                                                       : " (no Retry-After header)";
                }
                out.pass(rf.check, why);
            }
        }
    }
    check_unsigned_copy(c, inst, sub, timeout);
    inst.shut_down(wall_ms() + o.stop_grace_ms, ms(o.stop_grace_ms));
    report_protocol("http.host-protocol", inst.host, out);
}

void phase_contain(phase_context& c) {
    reporter& out = c.out;
    auto m = load_module(c.opt.module);
    if (!m) {
        return;
    }
    constexpr std::string_view name = "contain.malformed-settings";
    instance inst(m->descriptor, c.opt.outcome_delay_ms);
    std::string error;
    out.begin(name);
    if (inst.create(c.opt.config_json, error) != WB_OK ||
        m->descriptor->start(inst.conn) != WB_OK) {
        out.skip(name, "the instance did not start (see lifecycle.*)");
        return;
    }
    const wb_status st = inst.subscribe("kit-malformed", "{\"kit\":", error);
    if (st == WB_OK) {
        out.fail(name, "subscribe() accepted malformed settings JSON");
    } else if (st < WB_ERR_INVALID || st > WB_ERR_STATE) {
        out.fail(name, "subscribe() returned " + status_name(st) + ", not a WB_ERR_* value");
    } else {
        out.pass(name, "malformed settings JSON refused with " + status_name(st) +
                           (error.empty() ? "" : " (" + error + ")"));
    }
    inst.shut_down(wall_ms() + c.opt.stop_grace_ms, ms(c.opt.stop_grace_ms));
}

} // namespace wopbridge::check_kit
