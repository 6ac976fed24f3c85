package streamband.flink.reporter;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads fields and calls methods of Flink's network stack by name. The reporter is a plug-in
 * (a class loader of its own that sees Flink's classes, not compiled against flink-runtime),
 * and what it reads is internal to Flink 1.20: a name that is missing reads as null, so a
 * Flink that moved it loses those figures, never its jobs.
 */
final class Peek {
    private static final Map<String, Object> CACHE = new ConcurrentHashMap<>();
    private static final Object NONE = new Object();

    private Peek() {
    }

    /** Field {@code name} of {@code o} (declared by its class or a superclass), or null. */
    static Object field(Object o, String name) {
        if (o == null) {
            return null;
        }
        Object f = CACHE.computeIfAbsent(o.getClass().getName() + "#" + name, k -> find(o.getClass(), name, true));
        try {
            return f == NONE ? null : ((Field) f).get(o);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** What method {@code name()} of {@code o} returns, or null. */
    static Object call(Object o, String name) {
        if (o == null) {
            return null;
        }
        Object m = CACHE.computeIfAbsent(o.getClass().getName() + "." + name, k -> find(o.getClass(), name, false));
        try {
            return m == NONE ? null : ((Method) m).invoke(o);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** A count from {@code o}'s method {@code name()}, or null when there is none or it is
     * negative (a racy unsynchronized read, or a difference such as a channel's sender
     * backlog less its initial credit): the manager's receiver refuses a report with a
     * negative number in it, so an unknown value must not be sent as -1. */
    static Long num(Object o, String name) {
        Object v = call(o, name);
        if (!(v instanceof Number)) {
            return null;
        }
        long n = ((Number) v).longValue();
        return n >= 0 ? n : null;
    }

    private static Object find(Class<?> c, String name, boolean isField) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                if (isField) {
                    Field f = k.getDeclaredField(name);
                    f.setAccessible(true);
                    return f;
                }
                Method m = k.getDeclaredMethod(name);
                m.setAccessible(true);
                return m;
            } catch (NoSuchFieldException | NoSuchMethodException e) {
                // on to the superclass
            } catch (RuntimeException e) {
                return NONE;
            }
        }
        return NONE;
    }
}
