// kchaos: Kafka's own Java transactional producer (and a copier's consumer), driven line
// by line over TCP.
//
// The Python transactional workers (kchaos.workloads.txn) write every history line
// themselves; with `workload.client: java` the client they call is this process, so the
// transactions go out from the Java client of the run's Kafka release (transaction
// version 2 from Kafka 4.0 on a cluster whose transaction.version is 2: KIP-890 part 2,
// which librdkafka does not implement). Run inside a kchaos/kafka image by the source
// launcher: java -cp '/opt/kafka/libs/*' TxnBridge.java PORT
//
// Protocol (one JSON object per line, UTF-8). The harness connects once and sends
// requests {"id": N, "op": ..., ...}; each gets one reply {"id": N, "ok": true, ...} or
// {"id": N, "ok": false, "error": {"name", "detail", "retriable", "abortable", "fatal",
// "fenced"}} (fenced: another producer took the transactional.id; an
// InvalidProducerEpochException is abortable since KIP-588, not a fencing).
// Requests are served one at a time, in order. Delivery reports arrive whenever the
// producer calls back: {"op": "delivered", "tag": T, "partition": P, "offset": O} or
// {"op": "delivered", "tag": T, "error": NAME}.
//   open    {"config": {...}}                 a new KafkaProducer (byte[] keys and values)
//   init    {}                                initTransactions(); replies producer_id,
//                                             producer_epoch, transaction_version
//   begin   {}                                beginTransaction()
//   send    {"tag", "topic", "key", "data"}   send(); key and data base64 (key may be null)
//   flush   {}                                flush()
//   commit  {}                                commitTransaction()
//   abort   {}                                abortTransaction()
//   close   {"timeout_ms"}                    close(); the process exits after the reply
// The copier's consumer lives in the same process, so that the offsets go into the
// transaction with that consumer's own group metadata (generation and member id):
//   consume       {"config": {...}, "topic"}  a new KafkaConsumer (byte[]), subscribed
//   poll          {"timeout_ms"}              poll(); replies "records": [{"topic",
//                                             "partition", "offset", "data"}] (data base64
//                                             or null)
//   seek          {"topic", "partition", "offset"}
//   send_offsets  {"positions": [[topic, partition, next offset], ...]}
//                                             sendOffsetsToTransaction(offsets,
//                                             consumer.groupMetadata())
//   consume_close {}                          close the consumer (none open: nothing)
// Blocking calls wait at most the producer's max.block.ms (the harness sets it to the
// call's timeout in `open`).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnBridge {
    private static final ObjectMapper JSON = new ObjectMapper();
    // what the producer cannot recover from (Kafka's KafkaProducer javadoc: close it)
    private static final Set<String> FATAL = Set.of(
        "ProducerFencedException", "OutOfOrderSequenceException", "UnsupportedVersionException",
        "AuthorizationException", "TransactionalIdAuthorizationException",
        "ClusterAuthorizationException", "UnsupportedForMessageFormatException",
        "IllegalStateException", "InvalidTxnStateException");

    private final OutputStream out;
    private KafkaProducer<byte[], byte[]> producer;
    private KafkaConsumer<byte[], byte[]> consumer;

    TxnBridge(OutputStream out) {
        this.out = out;
    }

    private synchronized void write(ObjectNode line) {
        try {
            out.write((JSON.writeValueAsString(line) + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (Exception e) {
            // the harness went away: nothing is left to tell
            System.exit(3);
        }
    }

    // The error Kafka's client raised, named as the broker's error codes are (Errors) where
    // it is one, else by its class; classified the way KafkaProducer's javadoc says.
    static ObjectNode error(Throwable raised) {
        Throwable e = raised;
        while (e.getCause() != null && e.getClass() == KafkaException.class) {
            e = e.getCause(); // "in an error state": the cause is the real error
        }
        String cls = e.getClass().getSimpleName();
        Errors known = Errors.forException(e);
        String name = known == Errors.UNKNOWN_SERVER_ERROR ? cls : known.name();
        boolean fatal = FATAL.contains(cls);
        boolean retriable = !fatal && e instanceof RetriableException;
        ObjectNode err = JSON.createObjectNode();
        err.put("name", name);
        err.put("detail", cls + ": " + String.valueOf(e.getMessage()));
        err.put("retriable", retriable);
        err.put("abortable", !fatal && !retriable && e instanceof KafkaException);
        err.put("fatal", fatal);
        err.put("fenced", cls.equals("ProducerFencedException"));
        return err;
    }

    // The producer id, epoch and transaction version the client holds now: internal
    // state, read by reflection (the client exposes none of it); absent where a release
    // lacks a field (transaction version 2 exists from Kafka 4.0).
    private void state(ObjectNode reply) {
        try {
            Field tmField = KafkaProducer.class.getDeclaredField("transactionManager");
            tmField.setAccessible(true);
            Object tm = tmField.get(producer);
            Method pe = tm.getClass().getDeclaredMethod("producerIdAndEpoch");
            pe.setAccessible(true);
            Object ids = pe.invoke(tm);
            reply.put("producer_id", ids.getClass().getField("producerId").getLong(ids));
            reply.put("producer_epoch", ids.getClass().getField("epoch").getShort(ids));
            int version = 1;
            try {
                Method v2 = tm.getClass().getMethod("isTransactionV2Enabled");
                version = Boolean.TRUE.equals(v2.invoke(tm)) ? 2 : 1;
            } catch (NoSuchMethodException before40) {
                version = 1;
            }
            reply.put("transaction_version", version);
        } catch (Exception e) {
            reply.put("state_error", e.toString());
        }
    }

    // A request's "config" object as client properties.
    private static Properties properties(JsonNode req) {
        Properties props = new Properties();
        Map<?, ?> config = JSON.convertValue(req.path("config"), Map.class);
        for (Map.Entry<?, ?> e : config.entrySet()) {
            props.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
        }
        return props;
    }

    private void closeConsumer() {
        if (consumer != null) {
            KafkaConsumer<byte[], byte[]> old = consumer;
            consumer = null;
            old.close(Duration.ofSeconds(5));
        }
    }

    private void serve(JsonNode req, ObjectNode reply) throws Exception {
        String op = req.path("op").asText();
        switch (op) {
            case "open":
                producer = new KafkaProducer<>(properties(req), new ByteArraySerializer(),
                    new ByteArraySerializer());
                break;
            case "consume":
                closeConsumer();
                consumer = new KafkaConsumer<>(properties(req), new ByteArrayDeserializer(),
                    new ByteArrayDeserializer());
                consumer.subscribe(List.of(req.path("topic").asText()));
                break;
            case "poll": {
                ArrayNode records = reply.putArray("records");
                Base64.Encoder b64 = Base64.getEncoder();
                for (ConsumerRecord<byte[], byte[]> r :
                        consumer.poll(Duration.ofMillis(req.path("timeout_ms").asLong()))) {
                    ObjectNode rec = records.addObject();
                    rec.put("topic", r.topic());
                    rec.put("partition", r.partition());
                    rec.put("offset", r.offset());
                    rec.put("data", r.value() == null ? null : b64.encodeToString(r.value()));
                }
                break;
            }
            case "seek":
                consumer.seek(new TopicPartition(req.path("topic").asText(),
                    req.path("partition").asInt()), req.path("offset").asLong());
                break;
            case "send_offsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (JsonNode p : req.path("positions")) {
                    offsets.put(new TopicPartition(p.get(0).asText(), p.get(1).asInt()),
                        new OffsetAndMetadata(p.get(2).asLong()));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                break;
            }
            case "consume_close":
                closeConsumer();
                break;
            case "init":
                producer.initTransactions();
                state(reply);
                break;
            case "begin":
                producer.beginTransaction();
                break;
            case "send": {
                Base64.Decoder b64 = Base64.getDecoder();
                byte[] key = req.path("key").isNull() ? null : b64.decode(req.path("key").asText());
                byte[] data = b64.decode(req.path("data").asText());
                String tag = req.path("tag").asText();
                producer.send(new ProducerRecord<>(req.path("topic").asText(), key, data),
                    (meta, exc) -> {
                        ObjectNode done = JSON.createObjectNode();
                        done.put("op", "delivered");
                        done.put("tag", tag);
                        if (exc != null) {
                            done.put("error", error(exc).path("name").asText());
                        } else {
                            done.put("partition", meta.partition());
                            if (meta.hasOffset()) {
                                done.put("offset", meta.offset());
                            }
                        }
                        write(done);
                    });
                break;
            }
            case "flush":
                producer.flush();
                break;
            case "commit":
                producer.commitTransaction();
                break;
            case "abort":
                producer.abortTransaction();
                break;
            case "close":
                closeConsumer();
                if (producer != null) {
                    producer.close(Duration.ofMillis(req.path("timeout_ms").asLong(5000)));
                    producer = null;
                }
                break;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        try (ServerSocket server = new ServerSocket(port)) {
            System.out.println("{\"op\":\"listening\",\"port\":" + port + "}");
            System.out.flush();
            try (Socket socket = server.accept()) {
                socket.setTcpNoDelay(true);
                TxnBridge bridge = new TxnBridge(socket.getOutputStream());
                BufferedReader in = new BufferedReader(
                    new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null) {
                    JsonNode req = JSON.readTree(line);
                    ObjectNode reply = JSON.createObjectNode();
                    reply.put("id", req.path("id").asLong());
                    try {
                        bridge.serve(req, reply);
                        reply.put("ok", true);
                    } catch (Exception e) {
                        reply.put("ok", false);
                        reply.set("error", error(e));
                    }
                    bridge.write(reply);
                    if ("close".equals(req.path("op").asText())) {
                        break;
                    }
                }
                bridge.closeConsumer();
                if (bridge.producer != null) {
                    bridge.producer.close(Duration.ofSeconds(5));
                }
            }
        }
    }
}
