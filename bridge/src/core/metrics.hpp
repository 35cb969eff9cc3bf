#pragma once
// A tiny metrics registry with Prometheus text exposition (format 0.0.4). Families are declared up
// front with a closed list of label names; a sample with any other label name is dropped, so inbound
// content can never become a label. Label values are ids and enum spellings only.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wopbridge {

enum class metric_kind { counter, gauge, histogram };

using metric_labels = std::vector<std::pair<std::string, std::string>>;

class metrics_registry {
public:
    // Declares a family; `buckets` (upper bounds, ascending) only for histograms.
    void declare(std::string name, metric_kind kind, std::string help,
                 std::vector<std::string> label_names, std::vector<double> buckets = {});

    void increment(std::string_view name, const metric_labels& labels = {}, double by = 1);
    void set(std::string_view name, const metric_labels& labels, double value);
    void observe(std::string_view name, const metric_labels& labels, double value);
    // Drops every sample of a gauge family (before re-setting a snapshot such as states).
    void clear(std::string_view name);

    std::string exposition() const;
    // Subscription ids are ingest URLs, so a scrape that may not see them gets every family with
    // a `subscription` label summed over that label (one series per remaining label set); with
    // `only`, just the series of those subscriptions (a tenant's own) are kept instead.
    std::string exposition_without_subscriptions() const;
    std::string exposition_for(const std::set<std::string, std::less<>>& only) const;

    // Tests: the value of a counter or gauge sample (0 when absent), or a histogram's count.
    double value(std::string_view name, const metric_labels& labels = {}) const;

private:
    struct series {
        double value = 0;               // counter / gauge; histogram: sum
        std::vector<double> bucket_counts; // histogram: per bucket (non-cumulative)
        double count = 0;               // histogram
        metric_labels labels;           // as given, for re-rendering without one label
    };
    struct family {
        metric_kind kind = metric_kind::counter;
        std::string help;
        std::vector<std::string> label_names;
        std::vector<double> buckets;
        std::map<std::string, series> samples; // key: rendered label set
    };

    // The rendered `{a="x",b="y"}` for `labels` in declared order; false when a label is not declared.
    static bool render(const family& f, const metric_labels& labels, std::string& out);
    series* find(std::string_view name, const metric_labels& labels, metric_kind kind);
    enum class view { all, aggregated, only };
    std::string text(view v, const std::set<std::string, std::less<>>* only) const;

    mutable std::mutex mutex_;
    std::map<std::string, family, std::less<>> families_;
};

} // namespace wopbridge
