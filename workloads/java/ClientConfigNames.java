// kchaos: prints the config names the Kafka Java client on the classpath knows, as JSON
// ({"clients": VERSION, "producer": [...], "consumer": [...]}). Run inside a kchaos/kafka
// image with the tools' classpath by `python -m kchaos.workloads.javaconf` (source launcher).
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.utils.AppInfoParser;

public class ClientConfigNames {
    private static String list(Set<String> names) {
        StringBuilder out = new StringBuilder("[");
        for (String name : new TreeSet<>(names)) {
            out.append(out.length() > 1 ? "," : "").append('"').append(name).append('"');
        }
        return out.append("]").toString();
    }

    public static void main(String[] args) {
        System.out.println("{\"clients\":\"" + AppInfoParser.getVersion() + "\",\"producer\":"
            + list(ProducerConfig.configNames()) + ",\"consumer\":"
            + list(ConsumerConfig.configNames()) + "}");
    }
}
