// bench-preload: the fast path for scenario 6. Writes N deliveries straight through the store API
// (store::intake, the same group-committed, fsynced transactions `serve` uses: dedup row, delivery
// row, TriggerEvent content), as if N signed webhooks with webhook-id PREFIX%010d had been accepted
// for SUBSCRIPTION. The dedup keys are the host-keyed ones the bridge computes (same host key file),
// so a later request carrying one of those webhook-ids is answered `duplicate` by the real server.
//
// The deliveries must not start a million runs when `serve` opens the file. Two states, both
// through the same intake call:
//   held     (default) committed `held`: stored and de-duplicated like history, invisible to the
//            delivery engine (released only when the subscription *becomes* active again). The
//            store API has no bulk way to mark a delivery done without a run start per delivery.
//   pending  due in 2100: a million-delivery *backlog* (e.g. after a long upstream outage), which
//            the engine's due-time queries have to walk.
//
//   bench-preload DB HOST_KEY_FILE SUBSCRIPTION PREFIX N [held|pending]
// The subscription must exist (start `wopbridge serve` on the config once first).

#include "contract/events.hpp"
#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/secret_box.hpp"
#include "store/store.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

using namespace wopbridge;

int main(int argc, char** argv) {
    if (argc != 6 && argc != 7) {
        std::fprintf(stderr,
                     "usage: bench-preload DB HOST_KEY_FILE SUBSCRIPTION PREFIX N [held|pending]\n");
        return 2;
    }
    const std::string state = argc == 7 ? argv[6] : "held";
    if (state != "held" && state != "pending") {
        std::fprintf(stderr, "bench-preload: state must be held or pending\n");
        return 2;
    }
    const std::string db = argv[1];
    const std::string key_file = argv[2];
    const std::string sub = argv[3];
    const std::string prefix = argv[4];
    const long n = std::atol(argv[5]);

    system_random_source random;
    system_clock_source clock;
    auto box = secret_box::open(key_file, random);
    if (!box) {
        std::fprintf(stderr, "bench-preload: cannot open the host key\n");
        return 1;
    }
    sqlite_options so;
    so.path = db;
    so.group_commit_max_batch = 1024;
    auto st = open_sqlite_store(so);
    if (!st) {
        std::fprintf(stderr, "bench-preload: cannot open the store: %s\n",
                     st.error().message.c_str());
        return 1;
    }
    auto subscription = (*st)->get_subscription(sub);
    if (!subscription) {
        std::fprintf(stderr, "bench-preload: no subscription %s\n", sub.c_str());
        return 1;
    }
    id_generator ids(random);
    const millis far_future = 4102444800000; // 2100-01-01
    const millis day = 24LL * 3600 * 1000;

    std::mutex mu;
    std::condition_variable cv;
    long in_flight = 0;
    std::atomic<long> failed{0};
    const long window = 4096; // enough queued that every transaction carries a full batch
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
        char id[64];
        std::snprintf(id, sizeof id, "%s%010ld", prefix.c_str(), i);
        millis now = clock.now_ms();
        intake_request req;
        req.subscription_id = sub;
        req.tenant = subscription->tenant;
        req.dedup_key = box->dedup_key(sub, id);
        req.delivery_id = ids.make("dlv");
        req.run_id = ids.make("run");
        req.received_at = now;
        req.due_at = state == "held" ? now : far_future;
        req.hold = state == "held";
        req.dedup_expires_at = now + 2 * day;
        events::trigger_event_fields f;
        f.source = source_kind::webhook;
        f.subscription_id = sub;
        f.delivery_id = req.delivery_id;
        f.received_at = now;
        f.dedup_key = req.dedup_key;
        f.verified = true;
        std::string content = std::string(R"({"webhook":{"method":"POST","headers":{},"body":)") +
                              R"({"type":"ticket.created","id":")" + id +
                              R"(","data":{"ticket":{"id":4242,"priority":"high"}}}}})";
        auto te = events::trigger_event_json(f, content);
        if (!te) {
            std::fprintf(stderr, "bench-preload: bad content\n");
            return 1;
        }
        req.content_json = std::move(*te);
        {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return in_flight < window; });
            ++in_flight;
        }
        (*st)->intake(std::move(req), [&](result<intake_outcome> out) {
            if (!out) {
                failed.fetch_add(1);
            }
            std::lock_guard lock(mu);
            --in_flight;
            if (in_flight == window / 2 || in_flight == 0) { // not a wake-up per delivery
                cv.notify_all();
            }
        });
        if (i > 0 && i % 100000 == 0) {
            std::fprintf(stderr, "  preloaded %ld\n", i);
        }
    }
    {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return in_flight == 0; });
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto stats = (*st)->stats();
    std::printf("{\"deliveries\":%ld,\"failed\":%ld,\"seconds\":%.2f,\"per_s\":%.1f,"
                "\"transactions\":%llu}\n",
                n, failed.load(), s, n / s, static_cast<unsigned long long>(stats.intake_batches));
    return failed.load() == 0 ? 0 : 1;
}
