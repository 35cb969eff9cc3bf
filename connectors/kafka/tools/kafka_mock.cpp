// kafka-mock: librdkafka's built-in mock cluster as a process, and a tiny client for it (or for any
// broker). Debian has no Kafka broker; the mock speaks the real protocol on loopback TCP, so the
// bridge's kafka connector (a real librdkafka consumer) runs against it unchanged.
//
//   kafka-mock cluster [--brokers N] [--topic NAME[:PARTITIONS]]...
//       hosts a cluster; prints "bootstrap HOST:PORT,..." and runs until SIGINT/SIGTERM (or, when
//       stdin is a pipe, until it closes). Lines on such a stdin: "down ID" / "up ID" take a
//       broker down or up (an outage).
//   kafka-mock produce --bootstrap SERVERS --topic T [--count N] [--key K] [--quiet] VALUE
//       produces VALUE (each "{n}" replaced by 0..N-1) and waits for the acks; prints
//       "<topic>/<partition>/<offset>" per record unless --quiet.
//   kafka-mock offsets --bootstrap SERVERS --group G --topic T
//       prints {"topic":..,"group":..,"partitions":[{"partition":0,"committed":..,"end":..}],
//       "lag":..} — the group's committed offsets against the end of each partition.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <poll.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

volatile std::sig_atomic_t stop_requested = 0;

void on_signal(int) {
    stop_requested = 1;
}

int usage() {
    std::fprintf(stderr,
                 "usage: kafka-mock cluster [--brokers N] [--topic NAME[:PARTITIONS]]...\n"
                 "       kafka-mock produce --bootstrap SERVERS --topic T [--count N] [--key K] "
                 "[--quiet] VALUE\n"
                 "       kafka-mock offsets --bootstrap SERVERS --group G --topic T\n");
    return 2;
}

bool set(rd_kafka_conf_t* conf, const char* k, const std::string& v) {
    char err[512];
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        std::fprintf(stderr, "kafka-mock: %s: %s\n", k, err);
        return false;
    }
    return true;
}

void quiet_log(const rd_kafka_t*, int, const char*, const char*) {}

int cluster(int argc, char** argv) {
    int brokers = 1;
    std::vector<std::pair<std::string, int>> topics;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--brokers" && i + 1 < argc) {
            brokers = std::atoi(argv[++i]);
        } else if (a == "--topic" && i + 1 < argc) {
            std::string t = argv[++i];
            int parts = 1;
            if (auto c = t.find(':'); c != std::string::npos) {
                parts = std::atoi(t.c_str() + c + 1);
                t.resize(c);
            }
            topics.emplace_back(t, parts);
        } else {
            return usage();
        }
    }
    if (brokers < 1) {
        return usage();
    }
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk == nullptr) {
        std::fprintf(stderr, "kafka-mock: %s\n", err);
        return 1;
    }
    rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, brokers);
    if (mc == nullptr) {
        std::fprintf(stderr, "kafka-mock: cannot create the mock cluster\n");
        return 1;
    }
    for (const auto& [t, parts] : topics) {
        if (rd_kafka_mock_topic_create(mc, t.c_str(), parts, 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::fprintf(stderr, "kafka-mock: cannot create topic %s\n", t.c_str());
            return 1;
        }
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
    std::fflush(stdout);
    struct stat st{};
    const bool commands = ::fstat(STDIN_FILENO, &st) == 0 && S_ISFIFO(st.st_mode);
    std::string line;
    while (!stop_requested) {
        if (!commands) {
            ::pause(); // until a signal
            continue;
        }
        pollfd p{STDIN_FILENO, POLLIN, 0};
        const int r = ::poll(&p, 1, 200);
        if (r <= 0) {
            continue;
        }
        char buf[256];
        const auto n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) {
            break; // stdin closed
        }
        line.append(buf, static_cast<std::size_t>(n));
        for (auto nl = line.find('\n'); nl != std::string::npos; nl = line.find('\n')) {
            const std::string cmd = line.substr(0, nl);
            line.erase(0, nl + 1);
            if (cmd.rfind("down ", 0) == 0) {
                rd_kafka_mock_broker_set_down(mc, std::atoi(cmd.c_str() + 5));
                std::printf("broker %d down\n", std::atoi(cmd.c_str() + 5));
            } else if (cmd.rfind("up ", 0) == 0) {
                rd_kafka_mock_broker_set_up(mc, std::atoi(cmd.c_str() + 3));
                std::printf("broker %d up\n", std::atoi(cmd.c_str() + 3));
            }
            std::fflush(stdout);
        }
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}

struct produced {
    std::vector<std::string> lines;
    int failed = 0;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* p = static_cast<produced*>(opaque);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++p->failed;
        std::fprintf(stderr, "kafka-mock: produce failed: %s\n", rd_kafka_err2str(m->err));
        return;
    }
    p->lines.push_back(std::string(rd_kafka_topic_name(m->rkt)) + "/" +
                       std::to_string(m->partition) + "/" + std::to_string(m->offset));
}

int produce(int argc, char** argv) {
    std::string bootstrap, topic, key, value;
    long count = 1;
    bool quiet = false;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--bootstrap" && i + 1 < argc) {
            bootstrap = argv[++i];
        } else if (a == "--topic" && i + 1 < argc) {
            topic = argv[++i];
        } else if (a == "--count" && i + 1 < argc) {
            count = std::atol(argv[++i]);
        } else if (a == "--key" && i + 1 < argc) {
            key = argv[++i];
        } else if (a == "--quiet") {
            quiet = true;
        } else if (value.empty() && a.rfind("--", 0) != 0) {
            value = a;
        } else {
            return usage();
        }
    }
    if (bootstrap.empty() || topic.empty() || count < 1) {
        return usage();
    }
    produced out;
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    if (!set(conf, "bootstrap.servers", bootstrap) || !set(conf, "linger.ms", "5") ||
        !set(conf, "enable.idempotence", "true")) {
        return 1;
    }
    rd_kafka_conf_set_opaque(conf, &out);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk == nullptr) {
        std::fprintf(stderr, "kafka-mock: %s\n", err);
        return 1;
    }
    for (long n = 0; n < count; ++n) {
        std::string v = value;
        for (auto at = v.find("{n}"); at != std::string::npos; at = v.find("{n}", at)) {
            v.replace(at, 3, std::to_string(n));
        }
        for (;;) {
            const auto e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_VALUE(v.data(), v.size()),
                RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(rk, 50);
                continue;
            }
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
                std::fprintf(stderr, "kafka-mock: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
            break;
        }
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 30000);
    rd_kafka_destroy(rk);
    if (!quiet) {
        for (const auto& l : out.lines) {
            std::printf("%s\n", l.c_str());
        }
    }
    return out.failed == 0 && static_cast<long>(out.lines.size()) == count ? 0 : 1;
}

int offsets(int argc, char** argv) {
    std::string bootstrap, group, topic;
    for (int i = 0; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--bootstrap") {
            bootstrap = argv[i + 1];
        } else if (a == "--group") {
            group = argv[i + 1];
        } else if (a == "--topic") {
            topic = argv[i + 1];
        } else {
            return usage();
        }
    }
    if (bootstrap.empty() || group.empty() || topic.empty() || argc % 2 != 0) {
        return usage();
    }
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    if (!set(conf, "bootstrap.servers", bootstrap) || !set(conf, "group.id", group)) {
        return 1;
    }
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (rk == nullptr) {
        std::fprintf(stderr, "kafka-mock: %s\n", err);
        return 1;
    }
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    const struct rd_kafka_metadata* md = nullptr;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::fprintf(stderr, "kafka-mock: no metadata for topic %s\n", topic.c_str());
        return 1;
    }
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(4);
    for (int i = 0; i < md->topics[0].partition_cnt; ++i) {
        rd_kafka_topic_partition_list_add(list, topic.c_str(), md->topics[0].partitions[i].id);
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (rd_kafka_committed(rk, list, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::fprintf(stderr, "kafka-mock: cannot read the group's committed offsets\n");
        return 1;
    }
    std::string out = "{\"topic\":\"" + topic + "\",\"group\":\"" + group + "\",\"partitions\":[";
    long long lag = 0;
    for (int i = 0; i < list->cnt; ++i) {
        const auto& e = list->elems[i];
        std::int64_t lo = 0, hi = 0;
        rd_kafka_query_watermark_offsets(rk, topic.c_str(), e.partition, &lo, &hi, 10000);
        const long long committed = e.offset >= 0 ? e.offset : lo;
        lag += hi - committed;
        out += std::string(i ? "," : "") + "{\"partition\":" + std::to_string(e.partition) +
               ",\"committed\":" + (e.offset >= 0 ? std::to_string(e.offset) : "null") +
               ",\"end\":" + std::to_string(hi) + "}";
    }
    out += "],\"lag\":" + std::to_string(lag) + "}";
    std::printf("%s\n", out.c_str());
    rd_kafka_topic_partition_list_destroy(list);
    rd_kafka_destroy(rk);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        return usage();
    }
    const std::string cmd = argv[1];
    if (cmd == "cluster") {
        return cluster(argc - 2, argv + 2);
    }
    if (cmd == "produce") {
        return produce(argc - 2, argv + 2);
    }
    if (cmd == "offsets") {
        return offsets(argc - 2, argv + 2);
    }
    return usage();
}
