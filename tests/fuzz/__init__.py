"""Coverage-guided fuzz targets of the C speedups (docs/speedups-layout.md)."""
