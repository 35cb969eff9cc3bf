#include "core/rate_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace wopbridge {

namespace {

double burst_of(const rate_limit& l) {
    return l.burst > 0 ? l.burst : std::max(1.0, l.rate);
}

double refilled(double tokens, millis since, double rate, double burst) {
    return std::min(burst,
                    tokens + static_cast<double>(std::max<millis>(0, since)) * rate / 1000.0);
}

} // namespace

rate_limiter::rate_limiter(clock_source& clock, std::size_t max_keys)
    : clock_(clock), max_keys_(std::max<std::size_t>(1, max_keys)) {}

rate_limiter::bucket& rate_limiter::refreshed(std::string_view key, const rate_limit& limit,
                                              millis now) {
    const double burst = burst_of(limit);
    auto it = buckets_.find(std::string(key));
    if (it == buckets_.end()) {
        if (buckets_.size() >= max_keys_) {
            shrink(now);
        }
        it = buckets_.emplace(std::string(key), bucket{burst, now, limit.rate, burst}).first;
    }
    auto& b = it->second;
    if (b.rate != limit.rate || b.burst != burst) {
        // A changed limit (config reload) starts afresh under the new limit.
        b = bucket{burst, now, limit.rate, burst};
    }
    b.tokens = refilled(b.tokens, now - b.updated, limit.rate, burst);
    b.updated = std::max(b.updated, now);
    return b;
}

int rate_limiter::wait_seconds(double tokens, const rate_limit& limit) {
    return tokens >= 1.0 ? 0 : std::max(1, static_cast<int>(std::ceil((1.0 - tokens) / limit.rate)));
}

int rate_limiter::take(std::string_view key, const rate_limit& limit) {
    if (!limit.enabled()) {
        return 0;
    }
    const millis now = clock_.now_ms();
    std::lock_guard lock(mu_);
    auto& b = refreshed(key, limit, now);
    if (b.tokens >= 1.0) {
        b.tokens -= 1.0;
        return 0;
    }
    return wait_seconds(b.tokens, limit);
}

int rate_limiter::peek(std::string_view key, const rate_limit& limit) const {
    if (!limit.enabled()) {
        return 0;
    }
    const millis now = clock_.now_ms();
    std::lock_guard lock(mu_);
    auto it = buckets_.find(std::string(key));
    if (it == buckets_.end() || it->second.rate != limit.rate ||
        it->second.burst != burst_of(limit)) {
        return 0; // a fresh bucket is full
    }
    const auto& b = it->second;
    return wait_seconds(refilled(b.tokens, now - b.updated, b.rate, b.burst), limit);
}

void rate_limiter::charge(std::string_view key, const rate_limit& limit) {
    if (!limit.enabled()) {
        return;
    }
    const millis now = clock_.now_ms();
    std::lock_guard lock(mu_);
    auto& b = refreshed(key, limit, now);
    b.tokens = std::max(-b.burst, b.tokens - 1.0);
}

std::size_t rate_limiter::size() const {
    std::lock_guard lock(mu_);
    return buckets_.size();
}

void rate_limiter::shrink(millis now) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
        const auto& b = it->second;
        if (refilled(b.tokens, now - b.updated, b.rate, b.burst) >= b.burst) {
            it = buckets_.erase(it);
        } else {
            ++it;
        }
    }
    if (buckets_.size() < max_keys_) {
        return;
    }
    std::vector<std::pair<millis, std::string>> by_age;
    by_age.reserve(buckets_.size());
    for (const auto& [k, b] : buckets_) {
        by_age.emplace_back(b.updated, k);
    }
    const auto half = by_age.begin() + static_cast<std::ptrdiff_t>(by_age.size() / 2);
    std::nth_element(by_age.begin(), half, by_age.end());
    for (auto i = by_age.begin(); i != half; ++i) {
        buckets_.erase(i->second);
    }
}

} // namespace wopbridge
