"""RocketMQ 4.9's transactional messages: half and op records, the check plan, the check
service (``docs/broker.md``, "Transactional messages")."""
