package rmqproto.interop;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** Hex helpers and the writer of vector files. */
public final class Vectors {
    private Vectors() {
    }

    public static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            sb.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return sb.toString();
    }

    public static byte[] unhex(String text) {
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    /** Collects vectors per kind and writes tests/vectors/&lt;kind&gt;.json files. */
    public static final class Sink {
        private final Path dir;

        public Sink(Path dir) {
            this.dir = dir;
        }

        /** Starts (or overwrites) the file of one kind; add vectors, then call close(). */
        public Kind kind(String kind, String source) {
            return new Kind(dir.resolve(kind + ".json"), kind, source);
        }
    }

    /** The vectors of one kind. */
    public static final class Kind implements AutoCloseable {
        private final Path file;
        private final JSONObject doc = new JSONObject(new LinkedHashMap<>());
        private final JSONArray vectors = new JSONArray();

        Kind(Path file, String kind, String source) {
            this.file = file;
            doc.put("kind", kind);
            doc.put("source", source);
            doc.put("vectors", vectors);
        }

        /** Adds a vector: its name, the field values it was built from, and the bytes Java produced. */
        public void add(String name, Map<String, ?> fields, byte[] bytes) {
            JSONObject v = new JSONObject(new LinkedHashMap<>());
            v.put("name", name);
            v.put("fields", fields);
            v.put("hex", hex(bytes));
            vectors.add(v);
        }

        @Override
        public void close() throws Exception {
            String text = com.alibaba.fastjson.JSON.toJSONString(doc, SerializerFeature.PrettyFormat,
                SerializerFeature.DisableCircularReferenceDetect);
            Files.write(file, (text + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }
}
