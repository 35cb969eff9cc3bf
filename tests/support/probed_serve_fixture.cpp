#include "support/probed_serve_fixture.hpp"

#include <csignal>
#include <fstream>

namespace wopbridge::testing {

void probed_serve_fixture::start_serve(const std::string& config) {
    std::ofstream(dir_.file("wopbridge.yaml")) << config;
    ASSERT_TRUE(serve_.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve_.error;
    port_ = static_cast<std::uint16_t>(std::stoi(serve_.url().substr(serve_.url().rfind(':') + 1)));
    probe_ = std::make_unique<serve_probe>(serve_.url(), "hk_probe");
}

void probed_serve_fixture::TearDown() {
    if (probe_) {
        serve_.signal(SIGTERM);
        EXPECT_EQ(serve_.wait_exit(), 0) << read_text_file(dir_.file("serve.log"));
    }
}

} // namespace wopbridge::testing
