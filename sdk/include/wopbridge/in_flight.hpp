#pragma once
// Connector helper (header-only): counts requests between arrival and their answer so stop() can wait for them, and refuses new
// ones once stopping. A ticket is held by whatever answers the request (the submit callback).

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace wopbridge {

class in_flight {
  public:
    class ticket {
      public:
        explicit ticket(in_flight& owner) noexcept : owner_(owner) {}
        ticket(const ticket&) = delete;
        ticket& operator=(const ticket&) = delete;
        ~ticket() { owner_.leave(); }

      private:
        in_flight& owner_;
    };

    // nullptr once close_and_wait() was called.
    std::shared_ptr<ticket> enter() {
        std::lock_guard lock(mu_);
        if (closed_) {
            return nullptr;
        }
        ++count_;
        return std::make_shared<ticket>(*this);
    }

    // Refuses new requests and waits (at most `budget`) for the admitted ones to be answered.
    bool close_and_wait(std::chrono::milliseconds budget) {
        std::unique_lock lock(mu_);
        closed_ = true;
        return cv_.wait_for(lock, std::max(budget, std::chrono::milliseconds(0)),
                            [&] { return count_ == 0; });
    }

  private:
    void leave() noexcept {
        std::lock_guard lock(mu_);
        --count_;
        cv_.notify_all();
    }

    std::mutex mu_;
    std::condition_variable cv_;
    int count_ = 0;
    bool closed_ = false;
};

} // namespace wopbridge
