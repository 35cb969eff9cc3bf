#include "support/kafka_mock.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace wopbridge::testing {

namespace {

void quiet_log(const rd_kafka_t*, int, const char*, const char*) {}

rd_kafka_conf_t* conf_for(const std::string& bootstrap) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    if (!bootstrap.empty()) {
        rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
    }
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    return conf;
}

rd_kafka_t* make(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
    if (rk == nullptr) {
        rd_kafka_conf_destroy(conf);
        throw std::runtime_error(std::string("kafka test client: ") + err);
    }
    return rk;
}

struct acks {
    std::vector<produced_record> records;
    int failed = 0;
    std::string error;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* a = static_cast<acks*>(m->_private);
    if (a == nullptr) {
        return;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++a->failed;
        a->error = rd_kafka_err2str(m->err);
        return;
    }
    a->records.push_back({rd_kafka_topic_name(m->rkt), m->partition, m->offset});
    (void)opaque;
}

} // namespace

std::string produced_record::id() const {
    return topic + "/" + std::to_string(partition) + "/" + std::to_string(offset);
}

kafka_mock::kafka_mock(int brokers) : brokers_(brokers) {
    auto* rk = make(RD_KAFKA_PRODUCER, conf_for({}));
    auto* mc = rd_kafka_mock_cluster_new(rk, brokers);
    if (mc == nullptr) {
        rd_kafka_destroy(rk);
        throw std::runtime_error("kafka_mock: rd_kafka_mock_cluster_new failed");
    }
    rk_ = rk;
    mc_ = mc;
    bootstrap_ = rd_kafka_mock_cluster_bootstraps(mc);
}

kafka_mock::~kafka_mock() {
    rd_kafka_mock_cluster_destroy(static_cast<rd_kafka_mock_cluster_t*>(mc_));
    rd_kafka_destroy(static_cast<rd_kafka_t*>(rk_));
}

bool kafka_mock::create_topic(const std::string& name, int partitions) {
    return rd_kafka_mock_topic_create(static_cast<rd_kafka_mock_cluster_t*>(mc_), name.c_str(),
                                      partitions, 1) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

void kafka_mock::down() {
    for (int id = 1; id <= brokers_; ++id) {
        rd_kafka_mock_broker_set_down(static_cast<rd_kafka_mock_cluster_t*>(mc_), id);
    }
}

void kafka_mock::up() {
    for (int id = 1; id <= brokers_; ++id) {
        rd_kafka_mock_broker_set_up(static_cast<rd_kafka_mock_cluster_t*>(mc_), id);
    }
}

kafka_producer::kafka_producer(const std::string& bootstrap) {
    auto* conf = conf_for(bootstrap);
    char err[512];
    rd_kafka_conf_set(conf, "linger.ms", "2", err, sizeof err);
    rd_kafka_conf_set(conf, "message.timeout.ms", "30000", err, sizeof err);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rk_ = make(RD_KAFKA_PRODUCER, conf);
}

kafka_producer::~kafka_producer() {
    rd_kafka_flush(static_cast<rd_kafka_t*>(rk_), 5000);
    rd_kafka_destroy(static_cast<rd_kafka_t*>(rk_));
}

std::optional<produced_record> kafka_producer::produce(const std::string& topic,
                                                       const std::string& value,
                                                       const std::string& key, int partition) {
    auto* rk = static_cast<rd_kafka_t*>(rk_);
    acks a;
    const auto e = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()), RD_KAFKA_V_OPAQUE(&a),
        RD_KAFKA_V_END);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        error = rd_kafka_err2str(e);
        return std::nullopt;
    }
    rd_kafka_flush(rk, 30000);
    if (a.records.size() != 1) {
        error = a.error.empty() ? "no ack" : a.error;
        return std::nullopt;
    }
    return a.records.front();
}

std::vector<produced_record> kafka_producer::produce_all(const std::string& topic,
                                                         const std::vector<std::string>& values) {
    auto* rk = static_cast<rd_kafka_t*>(rk_);
    acks a;
    for (const auto& v : values) {
        for (;;) {
            const auto e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_VALUE(const_cast<char*>(v.data()), v.size()), RD_KAFKA_V_OPAQUE(&a),
                RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(rk, 10);
                continue;
            }
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
                error = rd_kafka_err2str(e);
            }
            break;
        }
    }
    rd_kafka_flush(rk, 30000);
    if (a.failed != 0) {
        error = a.error;
    }
    return a.records;
}

kafka_group_reader::kafka_group_reader(const std::string& bootstrap, const std::string& group) {
    auto* conf = conf_for(bootstrap);
    char err[512];
    rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof err);
    rk_ = make(RD_KAFKA_CONSUMER, conf);
}

kafka_group_reader::~kafka_group_reader() {
    rd_kafka_destroy_flags(static_cast<rd_kafka_t*>(rk_), RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

std::optional<std::map<std::int32_t, std::int64_t>>
kafka_group_reader::committed(const std::string& topic, int partitions) {
    auto* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p) {
        rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
    }
    std::optional<std::map<std::int32_t, std::int64_t>> out;
    if (rd_kafka_committed(static_cast<rd_kafka_t*>(rk_), list, 5000) ==
        RD_KAFKA_RESP_ERR_NO_ERROR) {
        out.emplace();
        for (int i = 0; i < list->cnt; ++i) {
            (*out)[list->elems[i].partition] = list->elems[i].offset >= 0 ? list->elems[i].offset
                                                                         : -1;
        }
    }
    rd_kafka_topic_partition_list_destroy(list);
    return out;
}

std::optional<std::map<std::int32_t, std::int64_t>>
kafka_group_reader::end_offsets(const std::string& topic, int partitions) {
    std::map<std::int32_t, std::int64_t> out;
    for (int p = 0; p < partitions; ++p) {
        std::int64_t lo = 0;
        std::int64_t hi = 0;
        if (rd_kafka_query_watermark_offsets(static_cast<rd_kafka_t*>(rk_), topic.c_str(), p, &lo,
                                             &hi, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            return std::nullopt;
        }
        out[p] = hi;
    }
    return out;
}

bool kafka_group_reader::all_committed(const std::string& topic, int partitions) {
    auto c = committed(topic, partitions);
    auto e = end_offsets(topic, partitions);
    if (!c || !e) {
        return false;
    }
    for (const auto& [p, end] : *e) {
        const auto got = c->count(p) ? c->at(p) : -1;
        if (end > 0 && got != end) {
            return false;
        }
    }
    return true;
}

} // namespace wopbridge::testing
