package streamband.kafka;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The benchmarks' sources as records, shared by the spouts that generate them inside a
 * topology and by the replay producer that writes them to Kafka: payloads, the settings
 * reader, and the tweet generator of Trending Topics. Nothing here needs Storm or Kafka, so
 * the producer runs with only Kafka's jars beside this one.
 */
public final class Records {
    private Records() {
    }

    /** A setting of {@code conf} as a number ({@code dflt} when absent). */
    public static double num(Map<String, Object> conf, String key, double dflt) {
        Object v = conf.get(key);
        return v instanceof Number ? ((Number) v).doubleValue() : v == null ? dflt : Double.parseDouble(v.toString());
    }

    /** A payload of {@code n} bytes (not all zeros, so no layer can compress it away). */
    public static byte[] payload(int n, long seed) {
        byte[] b = new byte[Math.max(n, 0)];
        long x = seed * 0x9E3779B97F4A7C15L + 1;
        for (int i = 0; i < b.length; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b[i] = (byte) x;
        }
        return b;
    }

    /**
     * A payload of {@code n} bytes that compresses: one random block of 64 bytes, repeated
     * (a compressed topic then costs its consumers a small fraction of the bytes; no layer
     * of Storm or the network compresses, so the tuples carry all {@code n}).
     */
    public static byte[] compressible(int n, long seed) {
        byte[] block = payload(64, seed);
        byte[] b = new byte[Math.max(n, 0)];
        for (int i = 0; i < b.length; i++) {
            b[i] = block[i % block.length];
        }
        return b;
    }

    /** Word sampler: the frequency list {@code bench.words}, a Zipf tail beyond it. */
    public static final class Words {
        final String[] words;
        final double[] cum;
        final double tailMass;
        final int tailSize;

        @SuppressWarnings("unchecked")
        public Words(Map<String, Object> conf) {
            List<Object> list = (List<Object>) conf.getOrDefault("bench.words", new ArrayList<>());
            int n = Math.max(list.size(), 1);
            words = new String[n];
            cum = new double[n];
            double acc = 0;
            for (int i = 0; i < list.size(); i++) {
                List<Object> e = (List<Object>) list.get(i);
                words[i] = e.get(0).toString();
                acc += ((Number) e.get(1)).doubleValue();
                cum[i] = acc;
            }
            if (list.isEmpty()) {
                words[0] = "word";
                cum[0] = acc = 1.0;
            }
            tailMass = Math.max(0.0, 1.0 - acc);
            tailSize = (int) num(conf, "bench.tail.words", 100000);
        }

        public String sample(Random rnd) {
            double total = cum[cum.length - 1] + tailMass;
            double u = rnd.nextDouble() * total;
            if (u >= cum[cum.length - 1]) {
                // Zipf (s = 1) over the tail ranks: rank = n * (N/n)^v, v uniform
                int n = cum.length;
                double r = n * Math.pow((double) (n + tailSize) / n, rnd.nextDouble());
                return "w" + (int) r;
            }
            int lo = 0;
            int hi = cum.length - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (cum[mid] < u) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return words[lo];
        }
    }

    /**
     * Tweets of {@code bench.words.per.tweet} words on average (12: 8-16; n: n - n/3 to
     * n + n/3) with trending bursts: every {@code bench.burst.period.s} seconds, {@code
     * bench.burst.words} random words take a share {@code bench.burst.share} of all words for
     * {@code bench.burst.length.s} seconds.
     */
    public static final class Tweets {
        private final Map<String, Object> conf;
        private final Words words;
        private final Random rnd;
        private final double burstShare;
        private final int minWords;
        private final int spanWords;
        private String[] burst = new String[0];
        private long burstEnd;
        private long nextBurst;

        public Tweets(Map<String, Object> conf, long seed, long now) {
            this.conf = conf;
            words = new Words(conf);
            rnd = new Random(seed);
            burstShare = num(conf, "bench.burst.share", 0.05);
            nextBurst = now + (long) (1000 * num(conf, "bench.burst.period.s", 30));
            int mean = Math.max(1, (int) num(conf, "bench.words.per.tweet", 12));
            minWords = mean - mean / 3;
            spanWords = 2 * (mean / 3) + 1;
        }

        /** The next tweet's text at (event) time {@code now}, ms. */
        public String next(long now) {
            if (now >= nextBurst) {
                int k = (int) num(conf, "bench.burst.words", 5);
                burst = new String[k];
                for (int i = 0; i < k; i++) {
                    burst[i] = words.sample(rnd);
                }
                burstEnd = now + (long) (1000 * num(conf, "bench.burst.length.s", 10));
                nextBurst = now + (long) (1000 * num(conf, "bench.burst.period.s", 30));
            }
            int len = minWords + rnd.nextInt(spanWords);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < len; i++) {
                if (i > 0) {
                    sb.append(' ');
                }
                boolean trending = now < burstEnd && burst.length > 0 && rnd.nextDouble() < burstShare;
                sb.append(trending ? burst[rnd.nextInt(burst.length)] : words.sample(rnd));
            }
            return sb.toString();
        }
    }
}
