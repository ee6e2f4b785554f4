package rmqproto.interop;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry point of the golden-vector tool.
 *
 * <pre>
 *   generate DIR   write every family's vectors as DIR/&lt;kind&gt;.json
 *   decode         read {"kind":..,"hex":..} lines on stdin, answer {"fields":..} or {"error":..}
 * </pre>
 */
public final class Main {
    private Main() {
    }

    /** Every vector family: each registers its decoders and writes its vector files. */
    static final Family[] FAMILIES = Families.ALL;

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("generate")) {
            Path dir = Paths.get(args[1]);
            dir.toFile().mkdirs();
            for (Family family : FAMILIES) {
                family.generate(new Vectors.Sink(dir));
            }
        } else if (args.length == 1 && args[0].equals("decode")) {
            decodeLoop();
        } else {
            System.err.println("usage: generate DIR | decode");
            System.exit(2);
        }
    }

    private static void decodeLoop() throws Exception {
        Map<String, Decoder> decoders = new LinkedHashMap<>();
        for (Family family : FAMILIES) {
            family.register(decoders);
        }
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isEmpty()) {
                continue;
            }
            JSONObject request = JSON.parseObject(line);
            JSONObject answer = new JSONObject();
            Decoder decoder = decoders.get(request.getString("kind"));
            try {
                if (decoder == null) {
                    throw new IllegalArgumentException("unknown kind " + request.getString("kind"));
                }
                answer.put("fields", decoder.decode(Vectors.unhex(request.getString("hex")), request));
            } catch (Throwable t) {
                answer.put("error", t.toString());
            }
            out.println(answer.toJSONString());
        }
    }

    /** Decodes bytes with the real Java classes into a JSON-able value. */
    public interface Decoder {
        Object decode(byte[] bytes, JSONObject request) throws Exception;
    }

    /** One family of formats. */
    public interface Family {
        void register(Map<String, Decoder> decoders);

        void generate(Vectors.Sink sink) throws Exception;
    }
}
