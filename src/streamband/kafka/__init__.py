"""Apache Kafka for the engines' sources: a cached home built from Maven Central
(:mod:`~streamband.kafka.home`), a single KRaft broker (:mod:`~streamband.kafka.broker`),
the benchmarks' paced replay producer and the consumer-lag reader
(:mod:`~streamband.kafka.replay`)."""
