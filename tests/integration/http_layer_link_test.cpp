// Not a test: integration_tests links wopbridge_core + the test support library only
// (tests/CMakeLists.txt), so the HTTP layer's sources are compiled into it here. Remove this file
// once integration_tests links wopbridge_http.
#include "../../bridge/src/http/api.cpp"
#include "../../bridge/src/http/auth.cpp"
#include "../../bridge/src/http/bridge_port.cpp"
#include "../../bridge/src/http/error_mapping.cpp"
#include "../../bridge/src/http/http_message.cpp"
#include "../../bridge/src/http/ingest_handlers.cpp"
#include "../../bridge/src/http/openapi_document.cpp"
#include "../../bridge/src/http/registration.cpp"
#include "../../bridge/src/http/router.cpp"
#include "../../bridge/src/http/run_handlers.cpp"
#include "../../bridge/src/http/seam_handlers.cpp"
#include "../../bridge/src/http/server.cpp"
#include "../../bridge/src/http/subscription_handlers.cpp"
#include "../../bridge/src/http/webhook_handlers.cpp"
