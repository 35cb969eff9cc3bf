#pragma once
// kafka_mock: librdkafka's built-in mock cluster (rdkafka_mock.h) hosted by the test process, and
// a producer and a group-offset reader on the real client. The mock speaks the Kafka protocol on
// loopback TCP (ports picked by the library), so a module loaded in the test or a separately
// spawned `wopbridge serve` connects to bootstrap() like to any broker. The cluster (records,
// groups, committed offsets) lives as long as this object: a bridge SIGKILLed and restarted finds
// its group's offsets where it left them.
//
//     wopbridge::testing::kafka_mock cluster;           // one broker
//     ASSERT_TRUE(cluster.create_topic("orders", 3));
//     kafka_producer p(cluster.bootstrap());
//     auto rec = p.produce("orders", R"({"id":1})", "c-1");
//     kafka_group_reader g(cluster.bootstrap(), "wopbridge");
//     auto committed = g.committed("orders", 3);        // partition -> next offset (-1: none)
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wopbridge::testing {

class kafka_mock {
  public:
    explicit kafka_mock(int brokers = 1);
    ~kafka_mock();
    kafka_mock(const kafka_mock&) = delete;
    kafka_mock& operator=(const kafka_mock&) = delete;

    const std::string& bootstrap() const noexcept { return bootstrap_; }
    int brokers() const noexcept { return brokers_; }
    bool create_topic(const std::string& name, int partitions);
    // An outage: every broker refuses and drops connections until up().
    void down();
    void up();

  private:
    void* rk_ = nullptr; // rd_kafka_t* owning the cluster
    void* mc_ = nullptr; // rd_kafka_mock_cluster_t*
    int brokers_ = 0;
    std::string bootstrap_;
};

struct produced_record {
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::string id() const; // "<topic>/<partition>/<offset>", the connector's provider event id
};

class kafka_producer {
  public:
    explicit kafka_producer(const std::string& bootstrap);
    ~kafka_producer();
    kafka_producer(const kafka_producer&) = delete;
    kafka_producer& operator=(const kafka_producer&) = delete;

    // Produces and waits for the broker's ack; nullopt (with `error`) on failure. partition -1:
    // the partitioner picks (by key, or spread without one).
    std::optional<produced_record> produce(const std::string& topic, const std::string& value,
                                           const std::string& key = {}, int partition = -1);
    // Values produced in one go, acks awaited together; one record per value, in order.
    std::vector<produced_record> produce_all(const std::string& topic,
                                             const std::vector<std::string>& values);
    std::string error;

  private:
    void* rk_ = nullptr;
};

// Reads a group's committed offsets (OffsetFetch), without joining the group.
class kafka_group_reader {
  public:
    kafka_group_reader(const std::string& bootstrap, const std::string& group);
    ~kafka_group_reader();
    kafka_group_reader(const kafka_group_reader&) = delete;
    kafka_group_reader& operator=(const kafka_group_reader&) = delete;

    // partition -> committed offset (the next one to read; -1 when none), nullopt on failure.
    std::optional<std::map<std::int32_t, std::int64_t>> committed(const std::string& topic,
                                                                  int partitions);
    // partition -> end offset (high watermark).
    std::optional<std::map<std::int32_t, std::int64_t>> end_offsets(const std::string& topic,
                                                                    int partitions);
    // Every partition's committed offset is its end offset.
    bool all_committed(const std::string& topic, int partitions);

  private:
    void* rk_ = nullptr;
};

} // namespace wopbridge::testing
