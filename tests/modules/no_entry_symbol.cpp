// Test module: exports a misspelled entry symbol only.
#include "raw_module.inc"

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v0(void) {
    static const wb_connector_descriptor d = raw_descriptor("no_entry_symbol");
    return &d;
}
