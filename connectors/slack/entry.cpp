// The module's one exported symbol; the SDK wrapper builds the descriptor and the trampolines.
#include "slack/slack_connector.hpp"

WOPBRIDGE_CONNECTOR(wopbridge::slack::slack_connector)
