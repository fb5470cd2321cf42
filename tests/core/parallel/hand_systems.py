"""A hand-built 8-GPU node for the parallel tests (figures stated here, not read from the catalog's system files)."""

from explorer.core.hardware.device import Cited, Link
from explorer.core.hardware.system import Domain, System


def hgx(devices_per_node: int = 8, nodes: int = 1) -> System:
    """An 8-GPU H100 node: NVLink 4 at 450 GB/s per direction per GPU, 3 us; 400 Gb/s InfiniBand per GPU
    (50 GB/s per direction), 5 us; PCIe Gen5 x16 host link at 64 GB/s per direction."""
    nv = Domain("NVLink", "scale_up", devices_per_node, "switched",
                Link("NVLink 4", Cited(450e9, "450 GB/s"), "per_direction"), Cited(3e-6, "3 us"))
    ib = Domain("InfiniBand", "scale_out", devices_per_node, "switched",
                Link("NDR", Cited(50e9, "400 Gb/s"), "per_direction"), Cited(5e-6, "5 us"))
    node = System("test-hgx", "test HGX", "test", "node", "nvidia-h100-sxm5", devices_per_node, (nv, ib),
                  host_link=Link("PCIe 5 x16", Cited(128e9, "128 GB/s"), "bidirectional"))
    return node.with_nodes(nodes) if nodes > 1 else node
