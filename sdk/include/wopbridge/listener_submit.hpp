#pragma once
// How a broker listener's worker submits one message (header-only).
//
// The worker keeps each message it holds under a key of its own (a delivery, a stream sequence,
// an offset) and acks it to the broker only after the host committed or recognised it. This
// routes the host's answer back by that key:
//
//   committed(key)                         accepted, held or duplicate: the broker may forget it
//   refused(key, reason, retry_after_s)    refused by the host; also a submit the host did not
//                                          take at all ("not taken, status N", no Retry-After)
//
// Both are called at most once per submit, on a host thread (or inside the call when not taken);
// let them hold the worker alive (capture a shared_ptr). The event goes unverified: a broker
// authenticates the connection, not the publisher.

#include <wopbridge/connector.hpp>
#include <wopbridge/refusal_backoff.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace wopbridge {

template <class Key, class Committed, class Refused>
void submit_held_message(const host& h, inbound_event ev, std::string_view subscription_id,
                         const Key& key, Committed committed, Refused refused) {
    ev.subscription_id = std::string(subscription_id);
    ev.received_at_ms = h.now_ms();
    ev.verified = false;
    const auto st = h.submit(ev, [key, committed, refused](const submit_outcome& o) {
        if (o.kind == outcome_kind::refused) {
            refused(key, o.reason, o.retry_after_seconds);
        } else {
            committed(key);
        }
    });
    if (st != status::ok) {
        refused(key, not_taken_reason(st), 0);
    }
}

} // namespace wopbridge
