// Test module: claims an ABI minor newer than the host's.
#include "raw_module.inc"

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor d = [] {
        auto x = raw_descriptor("newer_minor");
        x.abi_minor = WOPBRIDGE_ABI_MINOR + 1;
        return x;
    }();
    return &d;
}
