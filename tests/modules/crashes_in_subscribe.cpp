// Test module: a well-formed descriptor whose subscribe() dereferences a null pointer. The
// conformance kit must turn the crash into a FAIL line instead of dying with the module.
#include "raw_module.inc"

#include <signal.h>

namespace {
wb_status crashing_subscribe(wb_connector*, const wb_subscription*, char*, size_t) {
    ::raise(SIGSEGV); // a deterministic stand-in for a wild pointer
    return WB_OK;
}
} // namespace

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor d = [] {
        auto x = raw_descriptor("crashes_in_subscribe");
        x.capabilities = 0;
        x.on_http_request = nullptr;
        x.subscribe = crashing_subscribe;
        return x;
    }();
    return &d;
}
