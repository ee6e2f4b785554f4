package rmqproto.interop;

/** The registry of vector families, one per format family. */
final class Families {
    private Families() {
    }

    static final Main.Family[] ALL = {
        new RemotingFamily(), new BodiesFamily(), new StoreFamily(), new ReplicationFamily(),
    };
}
