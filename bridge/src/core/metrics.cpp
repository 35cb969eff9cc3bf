#include "core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wopbridge {
namespace {

std::string escape_label(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

std::string number(double v) {
    if (std::isinf(v)) {
        return v > 0 ? "+Inf" : "-Inf";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string_view kind_name(metric_kind k) {
    switch (k) {
    case metric_kind::counter: return "counter";
    case metric_kind::gauge: return "gauge";
    case metric_kind::histogram: return "histogram";
    }
    return "untyped";
}

// Adds `extra` (e.g. le="0.5") to a rendered label set.
std::string with_label(const std::string& rendered, const std::string& extra) {
    if (rendered.empty()) {
        return "{" + extra + "}";
    }
    return rendered.substr(0, rendered.size() - 1) + "," + extra + "}";
}

} // namespace

void metrics_registry::declare(std::string name, metric_kind kind, std::string help,
                               std::vector<std::string> label_names, std::vector<double> buckets) {
    std::lock_guard lock(mutex_);
    family f;
    f.kind = kind;
    f.help = std::move(help);
    f.label_names = std::move(label_names);
    std::sort(buckets.begin(), buckets.end());
    f.buckets = std::move(buckets);
    families_.insert_or_assign(std::move(name), std::move(f));
}

bool metrics_registry::render(const family& f, const metric_labels& labels, std::string& out) {
    for (const auto& [k, v] : labels) {
        if (std::find(f.label_names.begin(), f.label_names.end(), k) == f.label_names.end()) {
            return false;
        }
    }
    out.clear();
    for (const auto& name : f.label_names) {
        auto it = std::find_if(labels.begin(), labels.end(),
                               [&](const auto& p) { return p.first == name; });
        if (it == labels.end()) {
            continue;
        }
        out += out.empty() ? "{" : ",";
        out += name + "=\"" + escape_label(it->second) + "\"";
    }
    if (!out.empty()) {
        out += "}";
    }
    return true;
}

metrics_registry::series* metrics_registry::find(std::string_view name, const metric_labels& labels,
                                                 metric_kind kind) {
    auto it = families_.find(name);
    if (it == families_.end() || it->second.kind != kind) {
        return nullptr;
    }
    std::string key;
    if (!render(it->second, labels, key)) {
        return nullptr;
    }
    auto& s = it->second.samples[key];
    if (s.labels.empty()) {
        s.labels = labels;
    }
    if (kind == metric_kind::histogram && s.bucket_counts.size() != it->second.buckets.size()) {
        s.bucket_counts.assign(it->second.buckets.size(), 0);
    }
    return &s;
}

void metrics_registry::increment(std::string_view name, const metric_labels& labels, double by) {
    std::lock_guard lock(mutex_);
    if (auto* s = find(name, labels, metric_kind::counter); s && by >= 0) {
        s->value += by;
    } else if (auto* g = find(name, labels, metric_kind::gauge)) {
        g->value += by;
    }
}

void metrics_registry::set(std::string_view name, const metric_labels& labels, double value) {
    std::lock_guard lock(mutex_);
    if (auto* s = find(name, labels, metric_kind::gauge)) {
        s->value = value;
    }
}

void metrics_registry::observe(std::string_view name, const metric_labels& labels, double value) {
    std::lock_guard lock(mutex_);
    auto it = families_.find(name);
    if (it == families_.end()) {
        return;
    }
    if (auto* s = find(name, labels, metric_kind::histogram)) {
        const auto& b = it->second.buckets;
        auto pos = std::lower_bound(b.begin(), b.end(), value) - b.begin();
        if (static_cast<std::size_t>(pos) < b.size()) {
            s->bucket_counts[pos] += 1;
        }
        s->value += value;
        s->count += 1;
    }
}

void metrics_registry::clear(std::string_view name) {
    std::lock_guard lock(mutex_);
    if (auto it = families_.find(name); it != families_.end()) {
        it->second.samples.clear();
    }
}

double metrics_registry::value(std::string_view name, const metric_labels& labels) const {
    std::lock_guard lock(mutex_);
    auto it = families_.find(name);
    if (it == families_.end()) {
        return 0;
    }
    std::string key;
    if (!render(it->second, labels, key)) {
        return 0;
    }
    auto s = it->second.samples.find(key);
    if (s == it->second.samples.end()) {
        return 0;
    }
    return it->second.kind == metric_kind::histogram ? s->second.count : s->second.value;
}

std::string metrics_registry::exposition() const {
    return text(view::all, nullptr);
}

std::string metrics_registry::exposition_without_subscriptions() const {
    return text(view::aggregated, nullptr);
}

std::string metrics_registry::exposition_for(const std::set<std::string, std::less<>>& only) const {
    return text(view::only, &only);
}

std::string metrics_registry::text(view v, const std::set<std::string, std::less<>>* only) const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& [name, f] : families_) {
        out += "# HELP " + name + " " + f.help + "\n";
        out += "# TYPE " + name + " " + std::string(kind_name(f.kind)) + "\n";
        const bool by_subscription = std::find(f.label_names.begin(), f.label_names.end(),
                                               "subscription") != f.label_names.end();
        std::map<std::string, series> folded;
        const std::map<std::string, series>* samples = &f.samples;
        if (by_subscription && v != view::all) {
            for (const auto& [key, s] : f.samples) {
                const auto sub = std::find_if(s.labels.begin(), s.labels.end(),
                                              [](const auto& p) { return p.first == "subscription"; });
                if (v == view::only) {
                    if (sub != s.labels.end() && only->contains(sub->second)) {
                        folded.emplace(key, s);
                    }
                    continue;
                }
                metric_labels rest;
                for (const auto& p : s.labels) {
                    if (p.first != "subscription") {
                        rest.push_back(p);
                    }
                }
                std::string rest_key;
                render(f, rest, rest_key);
                auto& sum = folded[rest_key];
                sum.value += s.value;
                sum.count += s.count;
                sum.bucket_counts.resize(s.bucket_counts.size(), 0);
                for (std::size_t i = 0; i < s.bucket_counts.size(); ++i) {
                    sum.bucket_counts[i] += s.bucket_counts[i];
                }
            }
            samples = &folded;
        }
        for (const auto& [labels, s] : *samples) {
            if (f.kind != metric_kind::histogram) {
                out += name + labels + " " + number(s.value) + "\n";
                continue;
            }
            double cumulative = 0;
            for (std::size_t i = 0; i < f.buckets.size(); ++i) {
                cumulative += s.bucket_counts[i];
                out += name + "_bucket" + with_label(labels, "le=\"" + number(f.buckets[i]) + "\"") +
                       " " + number(cumulative) + "\n";
            }
            out += name + "_bucket" + with_label(labels, "le=\"+Inf\"") + " " + number(s.count) + "\n";
            out += name + "_sum" + labels + " " + number(s.value) + "\n";
            out += name + "_count" + labels + " " + number(s.count) + "\n";
        }
    }
    return out;
}

} // namespace wopbridge
