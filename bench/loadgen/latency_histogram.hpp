#pragma once
// An HdrHistogram-style latency recorder: values (microseconds) fall into log2 "magnitudes", each
// split linearly into `sub_buckets` buckets, so the relative error of a reported percentile is at
// most 1/sub_buckets (< 0.8 % with 128) from 1 us to ~1 hour, in a fixed 40 KiB array.
// Recording is O(1) and allocation-free, so it can sit on the load generator's hot path.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace wopbridge::bench {

class latency_histogram {
public:
    static constexpr int sub_bits = 7;
    static constexpr std::uint64_t sub_buckets = 1u << sub_bits; // 128
    static constexpr int magnitudes = 32;                        // up to 2^(32+7) us

    void record(std::uint64_t us) noexcept {
        counts_[index_of(us)] += 1;
        total_ += 1;
        max_ = std::max(max_, us);
        min_ = std::min(min_, us);
        sum_ += us;
    }

    void merge(const latency_histogram& other) noexcept {
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            counts_[i] += other.counts_[i];
        }
        total_ += other.total_;
        max_ = std::max(max_, other.max_);
        min_ = std::min(min_, other.min_);
        sum_ += other.sum_;
    }

    std::uint64_t count() const noexcept { return total_; }
    std::uint64_t max() const noexcept { return total_ ? max_ : 0; }
    double mean() const noexcept { return total_ ? static_cast<double>(sum_) / total_ : 0.0; }

    // The smallest recorded bucket value v with at least q of the samples <= v (upper bucket edge,
    // so percentiles are never flattered).
    std::uint64_t percentile(double q) const noexcept {
        if (total_ == 0) {
            return 0;
        }
        auto want = static_cast<std::uint64_t>(q * static_cast<double>(total_) + 0.5);
        want = std::clamp<std::uint64_t>(want, 1, total_);
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            seen += counts_[i];
            if (seen >= want) {
                return std::min(upper_edge(i), max_);
            }
        }
        return max_;
    }

private:
    // Magnitude 0 holds [0, 128) exactly; magnitude m >= 1 holds [128 << (m-1), 128 << m) in 64
    // linear steps of 2^(m-1) (the lower half of its sub-buckets overlaps magnitude m-1 and is unused).
    static std::size_t index_of(std::uint64_t v) noexcept {
        if (v < sub_buckets) {
            return static_cast<std::size_t>(v);
        }
        int m = std::bit_width(v) - sub_bits; // >= 1
        if (m >= magnitudes) {
            return magnitudes * sub_buckets - 1;
        }
        return static_cast<std::size_t>(m) * sub_buckets + static_cast<std::size_t>(v >> m);
    }
    static std::uint64_t upper_edge(std::size_t i) noexcept {
        std::uint64_t m = i / sub_buckets;
        std::uint64_t s = i % sub_buckets;
        if (m == 0) {
            return s;
        }
        return ((s + 1) << m) - 1;
    }

    std::array<std::uint64_t, magnitudes * sub_buckets> counts_{};
    std::uint64_t total_ = 0;
    std::uint64_t max_ = 0;
    std::uint64_t min_ = UINT64_MAX;
    std::uint64_t sum_ = 0;
};

} // namespace wopbridge::bench
