package rmqproto.interop;

import java.util.Map;

/** Vectors and decoders of the replication formats (stub until filled in). */
final class ReplicationFamily implements Main.Family {
    @Override
    public void register(Map<String, Main.Decoder> decoders) {
    }

    @Override
    public void generate(Vectors.Sink sink) throws Exception {
    }
}
