package logcompact.interop;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** `--name value` options (repeatable) and `--flag` switches; anything unknown is an error. */
public final class Args {
    private final Map<String, List<String>> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();

    /** valued: names that take a value; switches: names that take none. Names without the leading dashes. */
    public Args(String program, String[] argv, Set<String> valued, Set<String> switches) {
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--")) throw new Fail(program + ": unexpected argument '" + a + "'");
            String name = a.substring(2);
            String inline = null;
            int eq = name.indexOf('=');
            if (eq > 0 && valued.contains(name.substring(0, eq))) {
                inline = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (valued.contains(name)) {
                String v = inline;
                if (v == null) {
                    if (i + 1 >= argv.length) throw new Fail(program + ": --" + name + " needs a value");
                    v = argv[++i];
                }
                values.computeIfAbsent(name, k -> new ArrayList<>()).add(v);
            } else if (switches.contains(name) && inline == null) {
                flags.add(name);
            } else {
                throw new Fail(program + ": unknown option --" + name);
            }
        }
    }

    public boolean flag(String name) { return flags.contains(name); }

    public String get(String name, String dflt) {
        List<String> l = values.get(name);
        return l == null ? dflt : l.get(l.size() - 1);
    }

    public String required(String name) {
        String v = get(name, null);
        if (v == null) throw new Fail("missing required option --" + name);
        return v;
    }

    public List<String> all(String name) {
        List<String> l = values.get(name);
        return l == null ? new ArrayList<>() : l;
    }

    public long getLong(String name, long dflt) {
        String v = get(name, null);
        if (v == null) return dflt;
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new Fail("--" + name + " wants an integer, got '" + v + "'");
        }
    }

    public boolean has(String name) { return values.containsKey(name); }

    /** A failure to report as one line on stderr with exit status 2 (usage) or 1 (other). */
    public static final class Fail extends RuntimeException {
        public final int status;
        public Fail(String msg) { this(msg, 2); }
        public Fail(String msg, int status) { super(msg); this.status = status; }
    }

    public interface Body { void run() throws Exception; }

    /** Runs a program's body: prints `PROGRAM: error: ...` on stderr and exits non-zero on any failure. */
    public static void main(String program, Body body) {
        int status = 0;
        try {
            body.run();
        } catch (Fail f) {
            System.err.println(program + ": error: " + f.getMessage());
            status = f.status;
        } catch (Throwable t) {
            System.err.println(program + ": error: " + t);
            t.printStackTrace(System.err);
            status = 1;
        }
        System.out.flush();
        System.exit(status);
    }
}
