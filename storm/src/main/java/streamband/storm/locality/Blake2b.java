package streamband.storm.locality;

import java.nio.charset.StandardCharsets;

/**
 * BLAKE2b (RFC 7693), unkeyed, with an 8-byte digest: the stable hash of the Python side
 * ({@code streamband.model.routing.stable_hash}), so that a key absent from a routing table
 * falls back to the same instance in Storm as in the manager's plans (003 §3.3: "when a key
 * is not present in the routing table, it falls back to the standard hash-based routing").
 */
public final class Blake2b {
    private static final long[] IV = {
        0x6a09e667f3bcc908L, 0xbb67ae8584caa73bL, 0x3c6ef372fe94f82bL, 0xa54ff53a5f1d36f1L,
        0x510e527fade682d1L, 0x9b05688c2b3e6c1fL, 0x1f83d9abfb41bd6bL, 0x5be0cd19137e2179L,
    };
    private static final byte[][] SIGMA = {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
        {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
        {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
        {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
        {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
        {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
        {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
        {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
        {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
        {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    };

    private Blake2b() {
    }

    /** The first 8 bytes of BLAKE2b-64 of {@code data}, read little-endian (unsigned in a long). */
    public static long hash64(byte[] data) {
        long[] h = IV.clone();
        h[0] ^= 0x01010000L ^ 8L; // digest length 8, no key, fanout 1, depth 1
        long[] m = new long[16];
        long t = 0;
        int n = data.length;
        int off = 0;
        while (n - off > 128) {
            load(data, off, 128, m);
            t += 128;
            compress(h, m, t, false);
            off += 128;
        }
        int left = n - off;
        load(data, off, left, m);
        t += left;
        compress(h, m, t, true);
        return h[0];
    }

    /** {@code stable_hash(key, salt)} of the Python side: BLAKE2b of "key|salt" in UTF-8. */
    public static long stableHash(Object key, String salt) {
        return hash64((Keys.text(key) + "|" + salt).getBytes(StandardCharsets.UTF_8));
    }

    private static void load(byte[] d, int off, int len, long[] m) {
        java.util.Arrays.fill(m, 0L);
        for (int i = 0; i < len; i++) {
            m[i >>> 3] |= (d[off + i] & 0xffL) << (8 * (i & 7));
        }
    }

    private static void compress(long[] h, long[] m, long t, boolean last) {
        long[] v = new long[16];
        System.arraycopy(h, 0, v, 0, 8);
        System.arraycopy(IV, 0, v, 8, 8);
        v[12] ^= t;
        if (last) {
            v[14] = ~v[14];
        }
        for (int r = 0; r < 12; r++) {
            byte[] s = SIGMA[r % 10];
            g(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
            g(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
            g(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
            g(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
            g(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
            g(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
            g(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
            g(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
        }
        for (int i = 0; i < 8; i++) {
            h[i] ^= v[i] ^ v[i + 8];
        }
    }

    private static void g(long[] v, int a, int b, int c, int d, long x, long y) {
        v[a] = v[a] + v[b] + x;
        v[d] = Long.rotateRight(v[d] ^ v[a], 32);
        v[c] = v[c] + v[d];
        v[b] = Long.rotateRight(v[b] ^ v[c], 24);
        v[a] = v[a] + v[b] + y;
        v[d] = Long.rotateRight(v[d] ^ v[a], 16);
        v[c] = v[c] + v[d];
        v[b] = Long.rotateRight(v[b] ^ v[c], 63);
    }
}
