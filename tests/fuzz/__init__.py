"""Coverage-guided fuzz targets of the C speedups (docs/speedups.md)."""

#: The functions of ``targets.py``, in the order ``run.py`` runs them.
TARGETS = ("split_frames", "decode_frame", "decode_header", "properties", "take_usual_records",
           "dispatch_usual_records", "batch_body", "transfer_units", "ha_receiver",
           "record_columns")
