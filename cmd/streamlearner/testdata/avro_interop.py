#!/usr/bin/env python3
"""An independent Avro encoder and decoder for streamlearner's tests:
librdkafka's Python client (confluent_kafka) with the Apache Avro library
and the registry client of confluent_kafka.avro.

  avro_interop.py produce BROKER REGISTRY TOPIC JSONL AVSC
      Reads the topic "avro" (written by streamlearner produce --format
      avro) to learn which partition each key went to, then writes every
      event of JSONL, in file order, framed in the wire format by this
      encoder, to the same partition of TOPIC.
  avro_interop.py check BROKER REGISTRY TOPIC JSONL
      Decodes every record of TOPIC with this decoder and compares it with
      its JSON line (by key): prints "N records equal" or fails.
  avro_interop.py container JSONL AVSC OUT
      Writes every event of JSONL, in file order, to the Avro object
      container file OUT (deflate blocks), with the Apache Avro library's
      DataFileWriter.
  avro_interop.py missing MODE...
      Prints each module the modes import that python3 cannot, one a
      line with its Debian package; nothing when all import.
"""
import json
import sys

# What each mode imports, and nothing else: "missing" tries exactly these
# statements, so that a test skips a mode that would fail to start.
# confluent_kafka.avro imports requests (its registry client).
IMPORTS = {
    "container": [
        "import avro.schema",
        "from avro.datafile import DataFileWriter",
        "from avro.io import DatumWriter",
    ],
    "produce": [
        "from confluent_kafka import Consumer, Producer, TopicPartition",
        "from confluent_kafka.avro import CachedSchemaRegistryClient",
        "from confluent_kafka.avro.serializer.message_serializer import MessageSerializer",
        "import avro.schema",
    ],
}
IMPORTS["check"] = IMPORTS["produce"]


def load(mode):
    for statement in IMPORTS[mode]:
        exec(statement, globals())


def missing(modes):
    seen = set()
    for mode in modes:
        for statement in IMPORTS[mode]:
            try:
                exec(statement, {})
            except ImportError as e:
                name = (e.name or statement.split()[1]).split(".")[0]
                if name not in seen:
                    seen.add(name)
                    print("%s (Debian's python3-%s)" % (name, name.replace("_", "-")))


def read_topic(broker, topic):
    c = Consumer({"bootstrap.servers": broker, "group.id": "interop-" + topic,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    md = c.list_topics(topic, timeout=10)
    out = []
    for p in md.topics[topic].partitions:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        if hi <= lo:
            continue
        c.assign([TopicPartition(topic, p, lo)])
        n = 0
        while n < hi - lo:
            m = c.poll(10)
            if m is None:
                raise SystemExit("timed out reading %s/%d" % (topic, p))
            if m.error():
                raise SystemExit(str(m.error()))
            out.append((p, m.key(), m.value()))
            n += 1
    c.close()
    return out


def container(jsonl, avsc, out):
    schema = avro.schema.parse(open(avsc).read())
    n = 0
    with DataFileWriter(open(out, "wb"), DatumWriter(), schema, codec="deflate") as w:
        for line in open(jsonl):
            w.append(json.loads(line))
            n += 1
    print("%d records written" % n)


def main():
    if sys.argv[1] == "missing":
        missing(sys.argv[2:])
        return
    load(sys.argv[1])
    if sys.argv[1] == "container":
        container(*sys.argv[2:5])
        return
    mode, broker, registry, topic, jsonl = sys.argv[1:6]
    reg = CachedSchemaRegistryClient({"url": registry})
    ser = MessageSerializer(reg)
    events = [json.loads(l) for l in open(jsonl)]
    if mode == "produce":
        schema = avro.schema.parse(open(sys.argv[6]).read())
        where = {k: p for p, k, _ in read_topic(broker, "avro")}
        prod = Producer({"bootstrap.servers": broker})
        for ev in events:
            key = ev["id"].encode()
            value = ser.encode_record_with_schema(topic, schema, ev)
            prod.produce(topic, key=key, value=value, partition=where[key])
            prod.poll(0)
        if prod.flush(30) != 0:
            raise SystemExit("not every record was delivered")
        print("%d records written" % len(events))
    elif mode == "check":
        byid = {ev["id"]: ev for ev in events}
        n = 0
        for _, key, value in read_topic(broker, topic):
            got = ser.decode_message(value)
            want = byid[key.decode()]
            if got != want:
                raise SystemExit("record %s: decoded %r, JSON %r" % (key, got, want))
            n += 1
        if n != len(events):
            raise SystemExit("%d records, JSON has %d" % (n, len(events)))
        print("%d records equal" % n)


if __name__ == "__main__":
    main()
