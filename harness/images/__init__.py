"""kchaos images: the Kafka broker and Toxiproxy images the harness runs.

``ensure_images()`` returns the tags to use, building (offline, the default) or pulling
(``source="registry"``) only what is missing or out of date. Offline images carry the
label ``io.kchaos.inputs=<sha256>`` of everything they were built from; a second call
with unchanged inputs only inspects three images and returns.
"""

from __future__ import annotations

from kchaos.harness.images.build import ImageSet, ensure_images, image_sizes
from kchaos.harness.images.timing import setup_timing
from kchaos.harness.images.versions import (
    BASE_IMAGE,
    DEFAULT_KAFKA_VERSION,
    JMX_EXPORTER_VERSION,
    TOXIPROXY_VERSION,
)

__all__ = [
    "BASE_IMAGE",
    "DEFAULT_KAFKA_VERSION",
    "JMX_EXPORTER_VERSION",
    "TOXIPROXY_VERSION",
    "ImageSet",
    "ensure_images",
    "image_sizes",
    "setup_timing",
]
