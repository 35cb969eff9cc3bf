// Test module: built for ABI major 2 (the host supports 1).
#include "raw_module.inc"

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor d = [] {
        auto x = raw_descriptor("bad_abi_major");
        x.abi_major = WOPBRIDGE_ABI_MAJOR + 1;
        return x;
    }();
    return &d;
}
