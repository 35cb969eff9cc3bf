// Test module: a descriptor with a status value outside stable|alpha|wip.
#include "raw_module.inc"

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor d = [] {
        auto x = raw_descriptor("invalid_descriptor");
        x.status = "beta";
        return x;
    }();
    return &d;
}
