#pragma once
// Where this build directory put the program and the modules. One generated source per build
// directory defines them (tests/CMakeLists.txt), so every other test file compiles to the same
// command line in any build directory: the sanitizer build reuses the normal build's test objects
// through the compiler cache instead of compiling the suites twice (scripts/sanitize.sh).

namespace wopbridge::testing::build_paths {

const char* binary_dir();      // the build directory
const char* program();         // its wopbridge executable
const char* module_dir();      // its connector modules (<name>.so)
const char* test_module_dir(); // its test modules (tests/modules)

} // namespace wopbridge::testing::build_paths

#define WOPBRIDGE_BINARY_DIR (::wopbridge::testing::build_paths::binary_dir())
#define WOPBRIDGE_PROGRAM (::wopbridge::testing::build_paths::program())
#define WOPBRIDGE_MODULE_DIR (::wopbridge::testing::build_paths::module_dir())
#define WOPBRIDGE_TEST_MODULE_DIR (::wopbridge::testing::build_paths::test_module_dir())
