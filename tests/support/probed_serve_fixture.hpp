#pragma once
// A real `wopbridge serve` on a config the test writes, reached on raw sockets (port_) and through
// a serve_probe with the key hk_probe: the fixture of the hostile-framing and slow-body tests.
// TearDown asks a started bridge to stop and expects a clean exit.
#include "support/serve_probe.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

namespace wopbridge::testing {

class probed_serve_fixture : public ::testing::Test {
  protected:
    // Writes `config` to dir_/wopbridge.yaml and starts serve on it (log: dir_/serve.log).
    void start_serve(const std::string& config);
    void TearDown() override;

    temp_dir dir_;
    serve_process serve_;
    std::uint16_t port_ = 0;
    std::unique_ptr<serve_probe> probe_;
};

} // namespace wopbridge::testing
