// The module's one exported symbol; the SDK wrapper builds the descriptor and the trampolines.
#include "sms/sms_connector.hpp"

WOPBRIDGE_CONNECTOR(wopbridge::sms::sms_connector)
