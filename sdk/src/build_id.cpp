// The SDK build id a module records in its descriptor (sdk_build_id), so `wopbridge connectors`
// can show which SDK a module was built with.
namespace wopbridge::sdk {
const char* build_id() noexcept { return WOPBRIDGE_SDK_BUILD_ID; }
} // namespace wopbridge::sdk
