#pragma once
// Where connector submissions go. The bridge satisfies it through bridge_submit_sink; tests use a
// recording sink. `done` is called exactly once, after the durable commit (or the refusal).

#include "app/bridge.hpp"

namespace wopbridge {

class submit_sink {
  public:
    virtual ~submit_sink() = default;
    virtual void submit(const inbound_submission& s, submit_callback done) = 0;
    // False when the bridge is saturated (queue-like sources stop reading).
    virtual bool has_capacity() const { return true; }
};

// The production adapter. Header-only so plugins/ depends on bridge.hpp alone.
class bridge_submit_sink final : public submit_sink {
  public:
    explicit bridge_submit_sink(bridge& b) : bridge_(b) {}
    void submit(const inbound_submission& s, submit_callback done) override {
        bridge_.submit(s, std::move(done));
    }
    // The connector host's has_capacity(): the bridge's intake bound, so backpressure reaches the
    // queue source and the SMTP server in production, not only in tests.
    bool has_capacity() const override { return bridge_.has_intake_capacity(); }

  private:
    bridge& bridge_;
};

} // namespace wopbridge
